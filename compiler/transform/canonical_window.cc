// Canonical forms of the sliding-window ops (Conv, ConvTranspose, MaxPool, AveragePool, LpPool):
// kernel_shape, strides, dilations and explicit pads always present, auto_pad resolved against
// the input shape, and ConvTranspose's output_shape turned into pads and output_padding; a 2-D
// ConvTranspose with constant weights then becomes a Conv (conv_transpose_as_conv.h). LpPool
// becomes an AveragePool of |x|^p, times the window's size, to the power 1/p; MaxUnpool's output
// shape, the window's inverse, becomes an attribute, and so do Col2Im's image and block shapes.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <algorithm>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"
#include "transform/conv_transpose_as_conv.h"

namespace ember {
namespace compiler {
namespace {

std::vector<int64_t> Fill(size_t n, int64_t v) { return std::vector<int64_t>(n, v); }

void Window(Node& n, bool transpose, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs[0]);
  if (x.ndim() < 3) NodeError(n, "expected input of rank >= 3, got " + x.ToString());
  size_t sp = static_cast<size_t>(x.ndim() - 2);
  if (!n.HasAttr("kernel_shape")) {
    if (n.inputs.size() < 2) NodeError(n, "missing attribute 'kernel_shape'");
    const auto& w = ctx->TypeOf(n.inputs[1]).shape;
    n.attrs["kernel_shape"] = std::vector<int64_t>(w.begin() + 2, w.end());
  }
  auto k = n.GetInts("kernel_shape");
  auto s = n.GetInts("strides", Fill(sp, 1));
  auto d = n.GetInts("dilations", Fill(sp, 1));
  if (k.size() != sp || s.size() != sp || d.size() != sp) {
    NodeError(n, "kernel_shape/strides/dilations must have " + std::to_string(sp) + " entries");
  }
  std::string ap = n.GetString("auto_pad", "NOTSET");
  std::vector<int64_t> pads = n.GetInts("pads", Fill(2 * sp, 0));
  if (pads.size() != 2 * sp) NodeError(n, "pads must have " + std::to_string(2 * sp) + " entries");
  std::vector<int64_t> outpad = n.GetInts("output_padding", Fill(sp, 0));
  if (ap == "VALID") {
    pads = Fill(2 * sp, 0);
  } else if (ap == "SAME_UPPER" || ap == "SAME_LOWER") {
    for (size_t i = 0; i < sp; ++i) {
      int64_t in = x.shape[2 + i];
      int64_t eff = (k[i] - 1) * d[i] + 1;
      int64_t total;
      if (transpose) {
        int64_t out = in * s[i];
        total = std::max<int64_t>(0, s[i] * (in - 1) + outpad[i] + eff - out);
      } else {
        int64_t out = CeilDiv(in, s[i]);
        total = std::max<int64_t>(0, (out - 1) * s[i] + eff - in);
      }
      int64_t small = total / 2, big = total - small;
      bool upper = ap == "SAME_UPPER";
      pads[i] = upper ? small : big;
      pads[sp + i] = upper ? big : small;
    }
  } else if (ap != "NOTSET") {
    NodeError(n, "auto_pad must be NOTSET, VALID, SAME_UPPER or SAME_LOWER, got '" + ap + "'");
  }
  if (transpose && n.HasAttr("output_shape")) {
    auto os = n.GetInts("output_shape");
    if (os.size() == sp + 2) os.erase(os.begin(), os.begin() + 2);
    for (size_t i = 0; i < sp; ++i) {
      int64_t eff = (k[i] - 1) * d[i] + 1;
      int64_t total = s[i] * (x.shape[2 + i] - 1) + outpad[i] + eff - os.at(i);
      if (total < 0) {
        outpad[i] -= total;
        total = 0;
      }
      bool upper = ap != "SAME_LOWER";
      pads[i] = upper ? total / 2 : total - total / 2;
      pads[sp + i] = total - pads[i];
    }
    n.attrs.erase("output_shape");
  }
  n.attrs.erase("auto_pad");
  n.attrs["strides"] = s;
  n.attrs["dilations"] = d;
  n.attrs["pads"] = pads;
  if (transpose) n.attrs["output_padding"] = outpad;
}

// B, when given, holds one value per output channel: the kernels index it by channel (a B of 5
// for 8 channels was read past its end).
void CheckBias(const Node& n, CanonicalizeContext* ctx, int64_t out_channels) {
  if (!n.HasInput(2)) return;
  const TensorType b = ctx->TypeOf(n.inputs[2]);
  if (b.ndim() != 1 || b.shape[0] != out_channels) {
    NodeError(n, "B " + b.ToString() + " must hold " + std::to_string(out_channels) +
                     " values, one per output channel");
  }
}

void ConvOp(Node n, CanonicalizeContext* ctx) {
  n.attrs["group"] = n.GetInt("group", 1);
  const TensorType w = ctx->TypeOf(n.inputs.at(1));
  CheckConvOperands(n, ctx->TypeOf(n.inputs[0]), w, n.GetInt("group"));
  CheckBias(n, ctx, w.shape[0]);
  Window(n, false, ctx);
  ctx->EmitInto(std::move(n));
}

void ConvTransposeOp(Node n, CanonicalizeContext* ctx) {
  n.attrs["group"] = n.GetInt("group", 1);
  const TensorType w = ctx->TypeOf(n.inputs.at(1));
  CheckConvTransposeOperands(n, ctx->TypeOf(n.inputs[0]), w, n.GetInt("group"));
  CheckBias(n, ctx, w.shape[1] * n.GetInt("group"));
  Window(n, true, ctx);
  if (EmitConvTransposeAsConv(n, ctx)) return;
  ctx->EmitInto(std::move(n));
}

void PoolOp(Node n, CanonicalizeContext* ctx) {
  Window(n, false, ctx);
  n.attrs["ceil_mode"] = n.GetInt("ceil_mode", 0);
  ctx->EmitInto(std::move(n));
}

// |x|^p (p = 1: |x|; 2: x * x), and its inverse on a sum (1: the sum; 2: its square root).
int PowerOf(const Node& n, int x, double p, CanonicalizeContext* ctx) {
  if (p == 1) return ctx->Emit("Abs", n.name + "_abs", {x});
  if (p == 2) return ctx->Emit("Mul", n.name + "_square", {x, x});
  int a = ctx->Emit("Abs", n.name + "_abs", {x});
  const DLDataType dt = ctx->TypeOf(x).dtype;
  return ctx->Emit("Pow", n.name + "_pow", {a, ctx->Scalar(n.name + "_p", dt, p)});
}

int RootOf(const Node& n, int sum, double p, CanonicalizeContext* ctx) {
  if (p == 1) return sum;
  if (p == 2) return ctx->Emit("Sqrt", n.name + "_root", {sum});
  const DLDataType dt = ctx->TypeOf(sum).dtype;
  int inv = ctx->Scalar(n.name + "_inv_p", dt, 1.0 / p);
  return ctx->Emit("Pow", n.name + "_root", {sum, inv});
}

// The exponent p of an Lp op: a positive integer (ONNX's type).
double ExponentOf(const Node& n) {
  const int64_t p = n.GetInt("p", 2);
  if (p < 1) NodeError(n, "attribute 'p' must be positive, got " + std::to_string(p));
  return static_cast<double>(p);
}

void LpPoolOp(Node n, CanonicalizeContext* ctx) {
  Window(n, false, ctx);
  if (n.GetInt("ceil_mode", 0) != 0) {
    NodeUnsupported(n, "ceil_mode 1 (a window past the padded input sums fewer taps)");
  }
  const double p = ExponentOf(n);
  int64_t taps = 1;
  for (int64_t k : n.GetInts("kernel_shape")) taps *= k;
  AttrMap pool = n.attrs;
  pool.erase("p");
  pool["ceil_mode"] = int64_t{0};
  pool["count_include_pad"] = int64_t{1};
  int powered = PowerOf(n, n.inputs.at(0), p, ctx);
  int mean = ctx->Emit("AveragePool", n.name + "_mean", {powered}, pool);
  const DLDataType dt = ctx->TypeOf(mean).dtype;
  int sum = ctx->Emit("Mul", n.name + "_sum", {mean, ctx->Scalar(n.name + "_taps", dt, taps)});
  ctx->EmitInto(Node{"Identity", n.name, {}, {RootOf(n, sum, p, ctx)}, n.outputs});
}

// GlobalLpPool: the Lp norm of each channel's plane; LpNormalization: x over its Lp norm along
// an axis (p 1 or 2, as ONNX allows).
void LpNormOver(const Node& n, std::vector<int64_t> axes, bool divide, CanonicalizeContext* ctx) {
  const double p = ExponentOf(n);
  int powered = PowerOf(n, n.inputs.at(0), p, ctx);
  int sum = ctx->Emit("ReduceSum", n.name + "_sum", {powered},
                      {{"axes", axes}, {"keepdims", int64_t{1}}});
  const int norm = RootOf(n, sum, p, ctx);
  if (divide) {
    ctx->EmitInto(Node{"Div", n.name, {}, {n.inputs[0], norm}, n.outputs});
  } else {
    ctx->EmitInto(Node{"Identity", n.name, {}, {norm}, n.outputs});
  }
}

void GlobalLpPoolOp(Node n, CanonicalizeContext* ctx) {
  const int64_t r = ctx->Rank(n, 0);
  if (r < 3)
    NodeError(n, "expected input of rank >= 3, got " + ctx->TypeOf(n.inputs[0]).ToString());
  std::vector<int64_t> axes;
  for (int64_t a = 2; a < r; ++a) axes.push_back(a);
  LpNormOver(n, axes, false, ctx);
}

void LpNormalizationOp(Node n, CanonicalizeContext* ctx) {
  const int64_t p = n.GetInt("p", 2);
  if (p != 1 && p != 2) NodeError(n, "attribute 'p' must be 1 or 2, got " + std::to_string(p));
  LpNormOver(n, {NormalizeAxis(n, n.GetInt("axis", -1), ctx->Rank(n, 0))}, true, ctx);
}

// MaxUnpool: the output's shape from output_shape (a constant) or from the window. MaxPool's
// indices count positions in the window's shape ("indexed_shape"); a larger output_shape pads it
// at the end of each axis.
void MaxUnpoolOp(Node n, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs.at(0));
  const TensorType& at = ctx->TypeOf(n.inputs.at(1));
  const int64_t sp = x.ndim() - 2;
  if (sp < 1 || at.shape != x.shape || at.dtype != kInt64) {
    NodeError(n, "expected X [N, C, ...] and int64 indices of its shape, got " + x.ToString() +
                     " and " + at.ToString());
  }
  Window(n, false, ctx);
  const std::vector<int64_t> k = n.GetInts("kernel_shape"), s = n.GetInts("strides"),
                             p = n.GetInts("pads");
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  for (int64_t d = 0; d < sp; ++d) {
    out.push_back((x.shape[2 + d] - 1) * s[d] - p[d] - p[sp + d] + k[d]);
  }
  const std::vector<int64_t> indexed = out;
  if (HostTensorPtr given = n.HasInput(2) ? ctx->ConstInput(n, 2, "output_shape") : nullptr) {
    out = given->ToIntVector();
    bool fits = out.size() == indexed.size() && out[0] == x.shape[0] && out[1] == x.shape[1];
    for (size_t d = 2; fits && d < out.size(); ++d) fits = out[d] >= indexed[d];
    if (!fits) {
      NodeError(n, "output_shape must keep N and C and hold the unpooled " +
                       ShapeToString(indexed) + ", got " + ShapeToString(out));
    }
  }
  for (int64_t d : out) {
    if (d < 1 || d > kMaxFoldElements) {
      NodeError(n, "output shape " + ShapeToString(out) + " has a dimension outside 1.." +
                       std::to_string(kMaxFoldElements));
    }
  }
  ctx->DropInputsFrom(n, 2);
  n.attrs = {{"__out_shape", out}, {"indexed_shape", indexed}};
  ctx->EmitInto(std::move(n));
}

// Col2Im (opset 18), im2col's inverse: image_shape and block_shape (constants) become attributes
// beside full dilations, pads and strides, checked against the columns: C * prod(block_shape)
// rows, one column per position of the block sliding over the padded image.
void Col2ImOp(Node n, CanonicalizeContext* ctx) {
  const TensorType x = ctx->TypeOf(n.inputs.at(0));
  const std::vector<int64_t> image = ctx->RequiredConstInput(n, 1, "image_shape")->ToIntVector();
  const std::vector<int64_t> block = ctx->RequiredConstInput(n, 2, "block_shape")->ToIntVector();
  const size_t r = image.size();
  const std::vector<int64_t> d = n.GetInts("dilations", std::vector<int64_t>(r, 1)),
                             s = n.GetInts("strides", std::vector<int64_t>(r, 1)),
                             p = n.GetInts("pads", std::vector<int64_t>(2 * r, 0));
  bool fits = r >= 1 && block.size() == r && d.size() == r && s.size() == r && p.size() == 2 * r;
  for (size_t i = 0; fits && i < r; ++i) {
    // Each bounded before it is multiplied or added: attributes may hold any int64.
    auto bounded = [](int64_t v, int64_t low) { return v >= low && v <= kMaxFoldElements; };
    fits = bounded(image[i], 1) && bounded(block[i], 1) && bounded(d[i], 1) && s[i] >= 1 &&
           bounded(p[i], 0) && bounded(p[r + i], 0) &&
           d[i] * (block[i] - 1) < image[i] + p[i] + p[r + i];
  }
  if (!fits) {
    NodeError(n, "block_shape " + ShapeToString(block) + " (dilations " + ShapeToString(d) +
                     ") must fit image_shape " + ShapeToString(image) + " padded by " +
                     ShapeToString(p) + ", one value per axis, strides " + ShapeToString(s) +
                     " positive");
  }
  int64_t blocks = 1, positions = 1;
  for (size_t i = 0; i < r; ++i) {
    blocks *= block[i];
    positions *= (image[i] + p[i] + p[r + i] - d[i] * (block[i] - 1) - 1) / s[i] + 1;
    if (blocks > kMaxFoldElements || positions > kMaxFoldElements) break;
  }
  if (x.ndim() != 3 || x.shape[1] % blocks != 0 || x.shape[2] != positions) {
    NodeError(n, "input " + x.ToString() + " must be [N, C * " + std::to_string(blocks) + ", " +
                     std::to_string(positions) + "]: blocks " + ShapeToString(block) +
                     " sliding over the image " + ShapeToString(image) + " (pads " +
                     ShapeToString(p) + ", strides " + ShapeToString(s) + ", dilations " +
                     ShapeToString(d) + ")");
  }
  std::vector<int64_t> out = {x.shape[0], x.shape[1] / blocks};
  out.insert(out.end(), image.begin(), image.end());
  ctx->DropInputsFrom(n, 1);
  n.attrs = {{"__out_shape", out}, {"image_shape", image}, {"block_shape", block}, {"dilations", d},
             {"pads", p},          {"strides", s}};
  ctx->EmitInto(std::move(n));
}

// RoiAlign (opsets 10, 16): the operands checked, the defaults of the node's opset written out
// (opset 16 made half_pixel the default coordinate mode) and the output shape an attribute.
void RoiAlignOp(Node n, CanonicalizeContext* ctx) {
  const TensorType x = ctx->TypeOf(n.inputs.at(0)), rois = ctx->TypeOf(n.inputs.at(1)),
                   at = ctx->TypeOf(n.inputs.at(2));
  const int64_t count = rois.ndim() == 2 ? rois.shape[0] : -1;
  if (x.ndim() != 4 || x.dtype.code != kDLFloat || rois.dtype != x.dtype ||
      rois.shape != std::vector<int64_t>{count, 4} || at.dtype != kInt64 ||
      at.shape != std::vector<int64_t>{count}) {
    NodeError(n,
              "expected float X [N, C, H, W], rois [R, 4] of its type and int64 batch_indices "
              "[R], got " +
                  x.ToString() + ", " + rois.ToString() + " and " + at.ToString());
  }
  const std::string mode = n.GetString("mode", "avg");
  const std::string coords = n.GetString("coordinate_transformation_mode",
                                         ctx->opset() >= 16 ? "half_pixel" : "output_half_pixel");
  const int64_t height = n.GetInt("output_height", 1), width = n.GetInt("output_width", 1);
  const int64_t ratio = n.GetInt("sampling_ratio", 0);
  if (mode != "avg" && mode != "max") NodeError(n, "mode '" + mode + "' (valid: avg, max)");
  if (coords != "half_pixel" && coords != "output_half_pixel") {
    NodeError(n, "coordinate_transformation_mode '" + coords +
                     "' (valid: half_pixel, output_half_pixel)");
  }
  if (height < 1 || width < 1 || height > kMaxFoldElements / width || ratio < 0 || ratio > 64) {
    NodeError(n, "output_height and output_width must be positive and sampling_ratio 0..64, got " +
                     std::to_string(height) + ", " + std::to_string(width) + " and " +
                     std::to_string(ratio));
  }
  n.attrs = {{"__out_shape", std::vector<int64_t>{count, x.shape[1], height, width}},
             {"mode", mode},
             {"half_pixel", int64_t{coords == "half_pixel"}},
             {"output_height", height},
             {"output_width", width},
             {"sampling_ratio", ratio},
             {"spatial_scale", n.GetFloat("spatial_scale", 1.0)}};
  ctx->EmitInto(std::move(n));
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Col2Im", Col2ImOp);
EMBER_REGISTER_OP_CANONICALIZE("RoiAlign", RoiAlignOp);
EMBER_REGISTER_OP_CANONICALIZE("Conv", ConvOp);
EMBER_REGISTER_OP_CANONICALIZE("ConvTranspose", ConvTransposeOp);
EMBER_REGISTER_OP_CANONICALIZE("MaxPool", PoolOp);
EMBER_REGISTER_OP_CANONICALIZE("AveragePool", PoolOp);
EMBER_REGISTER_OP_CANONICALIZE("LpPool", LpPoolOp);
EMBER_REGISTER_OP_CANONICALIZE("GlobalLpPool", GlobalLpPoolOp);
EMBER_REGISTER_OP_CANONICALIZE("LpNormalization", LpNormalizationOp);
EMBER_REGISTER_OP_CANONICALIZE("MaxUnpool", MaxUnpoolOp);

}  // namespace compiler
}  // namespace ember
