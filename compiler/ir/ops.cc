// Shape rules, fusion patterns and attribute defaults of every operator the graph side knows.
// Rules read the canonical form (ember/compiler/ir/canonical_ops.h): constant inputs are attrs.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/window_attrs.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/shape_util.h"

namespace ember {
namespace compiler {
namespace {

using Types = std::vector<TensorType>;

Types SameAsFirst(const Node&, const Types& in) { return {in.at(0)}; }

Types Broadcast(const Node& n, const Types& in) {
  std::vector<int64_t> shape = in.at(0).shape;
  for (size_t i = 1; i < in.size(); ++i) shape = BroadcastShapes(n, shape, in[i].shape);
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].dtype != in[0].dtype) {
      NodeError(n, "input dtypes differ: " + DTypeToString(in[0].dtype) + " and " +
                       DTypeToString(in[i].dtype));
    }
  }
  return {TensorType{shape, in[0].dtype}};
}

Types Compare(const Node& n, const Types& in) {
  Types t = Broadcast(n, in);
  t[0].dtype = kBool;
  return t;
}

// Pow's exponent may have another dtype than its base.
Types PowRule(const Node& n, const Types& in) {
  return {TensorType{BroadcastShapes(n, in[0].shape, in[1].shape), in[0].dtype}};
}

Types WhereRule(const Node& n, const Types& in) {
  std::vector<int64_t> s = BroadcastShapes(n, in[0].shape, in[1].shape);
  s = BroadcastShapes(n, s, in[2].shape);
  return {TensorType{s, in[1].dtype}};
}

// Spatial output extent of a sliding window (Conv/Pool).
int64_t WindowOut(int64_t in, int64_t k, int64_t stride, int64_t dil, int64_t pb, int64_t pe,
                  bool ceil_mode) {
  int64_t eff = (k - 1) * dil + 1;
  int64_t span = in + pb + pe - eff;
  int64_t out = ceil_mode ? CeilDiv(span, stride) + 1 : span / stride + 1;
  // A ceil-mode window must start inside the input or its begin padding.
  if (ceil_mode && (out - 1) * stride >= in + pb) --out;
  return out;
}

// Block of the layout attribute `key` (absent: NCHW); throws naming the node when malformed.
int64_t LayoutAttrBlock(const Node& n, const char* key) {
  const std::string layout = n.GetString(key, "NCHW");
  const int64_t block = LayoutBlock(layout);
  if (block < 0) NodeError(n, std::string(key) + " must be NCHW or NCHW<x>c, got " + layout);
  return block;
}

// The NCHW type of a tensor stored in `layout`, checked against that layout.
TensorType Unblocked(const Node& n, const TensorType& t, int64_t block) {
  if (block == 0) return t;
  if (t.ndim() != 5 || t.shape[4] != block) {
    NodeError(n, "expected a [N][C/" + std::to_string(block) + "][H][W][" + std::to_string(block) +
                     "] tensor, got " + t.ToString());
  }
  return TensorType{UnblockedShape(t.shape), t.dtype};
}

// A 4-D type stored in `layout` (channels must fill whole blocks).
TensorType Blocked(const Node& n, const TensorType& t, int64_t block) {
  if (block == 0) return t;
  if (t.ndim() != 4 || t.shape[1] % block != 0) {
    NodeError(n, "cannot store " + t.ToString() + " in " + LayoutName(block) +
                     " (channels must be a multiple of " + std::to_string(block) + ")");
  }
  return TensorType{BlockedShape(t.shape, block), t.dtype};
}

Types LayoutTransformRule(const Node& n, const Types& in) {
  const int64_t src = LayoutAttrBlock(n, kSrcLayoutAttr), dst = LayoutAttrBlock(n, kDstLayoutAttr);
  if ((src == 0) == (dst == 0)) {
    NodeError(n, "converts between NCHW and NCHW<x>c only, got " + LayoutName(src) + " -> " +
                     LayoutName(dst));
  }
  TensorType x = Unblocked(n, in[0], src);
  if (x.ndim() != 4) NodeError(n, "expected a 4-D NCHW tensor, got " + x.ToString());
  return {Blocked(n, x, dst)};
}

Types ConvRule(const Node& n, const Types& in) {
  const int64_t in_block = LayoutAttrBlock(n, kDataLayoutAttr);
  const int64_t out_block = LayoutAttrBlock(n, kOutLayoutAttr);
  const TensorType x = Unblocked(n, in[0], in_block);
  const TensorType& w = in[1];
  if ((in_block != 0 || out_block != 0) && w.ndim() != 4) {
    NodeError(n, "a channel-blocked Conv is 2-D, got W " + w.ToString());
  }
  if (x.ndim() < 3 || w.ndim() != x.ndim()) {
    NodeError(n,
              "expected X and W of equal rank >= 3, got " + x.ToString() + " and " + w.ToString());
  }
  int64_t sp = x.ndim() - 2;
  const WindowAttrs win = WindowAttrs::Of(n, sp);
  const auto &k = win.kernel, &s = win.strides, &d = win.dilations, &p = win.pads;
  CheckConvOperands(n, x, w, win.group);
  std::vector<int64_t> out{x.shape[0], w.shape[0]};
  for (int64_t i = 0; i < sp; ++i) {
    int64_t o = WindowOut(x.shape[2 + i], k[i], s[i], d[i], p[i], p[sp + i], false);
    if (o <= 0) NodeError(n, "kernel larger than padded input " + x.ToString());
    out.push_back(o);
  }
  // An integer conv (kDataZeroPointAttr) of 8-bit operands sums in int32.
  const bool integer = x.dtype == kUInt8 || x.dtype == kInt8;
  if (in.size() > 3) {
    if (!integer || !n.HasAttr(kDataZeroPointAttr) || in.size() <= kDataZeroPointInput ||
        in[kDataZeroPointInput].NumElements() != 1 || in[kDataZeroPointInput].dtype != x.dtype) {
      NodeError(n, "expected at most 3 inputs (X, W, B), got " + std::to_string(in.size()));
    }
  }
  return {Blocked(n, TensorType{out, integer ? kInt32 : x.dtype}, out_block)};
}

Types ConvTransposeRule(const Node& n, const Types& in) {
  const TensorType& x = in[0];
  const TensorType& w = in[1];
  if (x.ndim() < 3) NodeError(n, "expected X of rank >= 3, got " + x.ToString());
  int64_t sp = x.ndim() - 2;
  const WindowAttrs win = WindowAttrs::Of(n, sp);
  const auto &k = win.kernel, &s = win.strides, &d = win.dilations, &p = win.pads,
             &op = win.output_padding;
  CheckConvTransposeOperands(n, x, w, win.group);
  std::vector<int64_t> out{x.shape[0], w.shape[1] * win.group};
  for (int64_t i = 0; i < sp; ++i) {
    out.push_back(s[i] * (x.shape[2 + i] - 1) + op[i] + (k[i] - 1) * d[i] + 1 - p[i] - p[sp + i]);
    if (out.back() <= 0) {
      NodeError(n, "output size " + std::to_string(out.back()) + " along spatial axis " +
                       std::to_string(i) + " (pads larger than the upsampled input " +
                       x.ToString() + ")");
    }
  }
  return {TensorType{out, x.dtype}};
}

Types PoolRule(const Node& n, const Types& in) {
  // A blocked MaxPool (NCHW[x]c in and out) has one output.
  const int64_t block = LayoutAttrBlock(n, kDataLayoutAttr);
  if (block != 0 && n.outputs.size() > 1) NodeError(n, "a channel-blocked MaxPool has no Indices");
  const TensorType x = Unblocked(n, in[0], block);
  int64_t sp = x.ndim() - 2;
  const WindowAttrs win = WindowAttrs::Of(n, sp);
  const auto &k = win.kernel, &s = win.strides, &d = win.dilations, &p = win.pads;
  const bool ceil_mode = win.ceil_mode;
  std::vector<int64_t> out{x.shape[0], x.shape[1]};
  for (int64_t i = 0; i < sp; ++i) {
    out.push_back(WindowOut(x.shape[2 + i], k[i], s[i], d[i], p[i], p[sp + i], ceil_mode));
  }
  Types t{Blocked(n, TensorType{out, x.dtype}, block)};
  if (n.outputs.size() > 1) t.push_back(TensorType{out, kInt64});
  return t;
}

Types GlobalPoolRule(const Node&, const Types& in) {
  TensorType t = in[0];
  for (size_t i = 2; i < t.shape.size(); ++i) t.shape[i] = 1;
  return {t};
}

Types GemmRule(const Node& n, const Types& in) {
  const auto& a = in[0].shape;
  const auto& b = in[1].shape;
  if (a.size() != 2 || b.size() != 2) NodeError(n, "A and B must be 2-D");
  int64_t m = n.GetInt("transA") ? a[1] : a[0];
  int64_t ka = n.GetInt("transA") ? a[0] : a[1];
  int64_t kb = n.GetInt("transB") ? b[1] : b[0];
  int64_t nn = n.GetInt("transB") ? b[0] : b[1];
  if (ka != kb)
    NodeError(n, "inner dimensions differ: " + ShapeToString(a) + " x " + ShapeToString(b));
  if (n.HasInput(2)) BroadcastShapes(n, {m, nn}, in[2].shape);
  return {TensorType{{m, nn}, in[0].dtype}};
}

Types MatMulRule(const Node& n, const Types& in) {
  std::vector<int64_t> a = in[0].shape, b = in[1].shape;
  if (a.empty() || b.empty()) NodeError(n, "MatMul inputs must have rank >= 1");
  bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  if (a.back() != b[b.size() - 2]) {
    NodeError(n, "inner dimensions differ: " + in[0].ToString() + " x " + in[1].ToString());
  }
  std::vector<int64_t> batch = BroadcastShapes(n, std::vector<int64_t>(a.begin(), a.end() - 2),
                                               std::vector<int64_t>(b.begin(), b.end() - 2));
  if (!a1) batch.push_back(a[a.size() - 2]);
  if (!b1) batch.push_back(b.back());
  return {TensorType{batch, in[0].dtype}};
}

Types ReduceRule(const Node& n, const Types& in) {
  auto axes = n.GetInts("axes");
  bool keep = n.GetInt("keepdims") != 0;
  std::vector<int64_t> out;
  for (int64_t i = 0; i < in[0].ndim(); ++i) {
    bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!red) {
      out.push_back(in[0].shape[i]);
    } else if (keep) {
      out.push_back(1);
    }
  }
  return {TensorType{out, in[0].dtype}};
}

Types ArgRule(const Node& n, const Types& in) {
  int64_t axis = n.GetInt("axis");
  std::vector<int64_t> out;
  for (int64_t i = 0; i < in[0].ndim(); ++i) {
    if (i != axis) {
      out.push_back(in[0].shape[i]);
    } else if (n.GetInt("keepdims")) {
      out.push_back(1);
    }
  }
  return {TensorType{out, kInt64}};
}

Types CastRule(const Node& n, const Types& in);  // defined by the frontend's dtype table

Types OutputTypeIsAttr(const Node& n, const Types& in) {
  // Reshape/Expand/Flatten/Squeeze/Unsqueeze/Slice/Resize: the canonicalizer stores the
  // computed output shape in "__out_shape".
  return {TensorType{n.GetInts("__out_shape"), in[0].dtype}};
}

Types TransposeRule(const Node& n, const Types& in) {
  auto perm = n.GetInts("perm");
  if (static_cast<int64_t>(perm.size()) != in[0].ndim()) NodeError(n, "perm length != rank");
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(in[0].shape.at(static_cast<size_t>(p)));
  return {TensorType{out, in[0].dtype}};
}

Types ConcatRule(const Node& n, const Types& in) {
  int64_t axis = n.GetInt("axis");
  TensorType t = in[0];
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].ndim() != t.ndim()) NodeError(n, "inputs differ in rank");
    for (int64_t d = 0; d < t.ndim(); ++d) {
      if (d != axis && in[i].shape[d] != t.shape[d]) {
        NodeError(n, "input " + std::to_string(i) + " shape " + ShapeToString(in[i].shape) +
                         " does not match " + ShapeToString(in[0].shape) + " off the axis");
      }
    }
    t.shape[axis] += in[i].shape[axis];
  }
  return {t};
}

Types SplitRule(const Node& n, const Types& in) {
  int64_t axis = n.GetInt("axis");
  Types out;
  for (int64_t s : n.GetInts("split")) {
    TensorType t = in[0];
    t.shape[axis] = s;
    out.push_back(t);
  }
  return out;
}

Types GatherRule(const Node& n, const Types& in) {
  int64_t axis = n.GetInt("axis");
  std::vector<int64_t> out(in[0].shape.begin(), in[0].shape.begin() + axis);
  out.insert(out.end(), in[1].shape.begin(), in[1].shape.end());
  out.insert(out.end(), in[0].shape.begin() + axis + 1, in[0].shape.end());
  return {TensorType{out, in[0].dtype}};
}

// GatherElements, ScatterElements: indices of the data's rank, each axis but `axis` within the
// data's (the kernel reads or writes the data at the indices' own positions there).
void CheckElementIndices(const Node& n, const TensorType& data, const TensorType& indices) {
  const int64_t axis = n.GetInt("axis");
  bool fits = indices.ndim() == data.ndim();
  for (int64_t d = 0; fits && d < data.ndim(); ++d) {
    fits = d == axis || indices.shape[d] <= data.shape[d];
  }
  if (!fits) {
    NodeError(n, "indices " + indices.ToString() + " must have the rank of data " +
                     data.ToString() + " and no larger extent off axis " + std::to_string(axis));
  }
}

Types GatherElementsRule(const Node& n, const Types& in) {
  CheckElementIndices(n, in[0], in[1]);
  return {TensorType{in[1].shape, in[0].dtype}};
}

Types ScatterElementsRule(const Node& n, const Types& in) {
  CheckElementIndices(n, in[0], in[1]);
  if (in[2].shape != in[1].shape || in[2].dtype != in[0].dtype) {
    NodeError(n, "updates " + in[2].ToString() + " must have the shape of indices " +
                     in[1].ToString() + " and the dtype of data " + in[0].ToString());
  }
  return {in[0]};
}

// GatherND, ScatterND: indices [..., k] address slices of data past its first batch_dims + k axes.
int64_t TupleLength(const Node& n, const TensorType& data, const TensorType& indices,
                    int64_t batch_dims) {
  if (batch_dims >= std::min(data.ndim(), indices.ndim())) {
    NodeError(n, "batch_dims " + std::to_string(batch_dims) + " must be below the ranks of data " +
                     data.ToString() + " and indices " + indices.ToString());
  }
  const int64_t k = indices.ndim() > 0 ? indices.shape.back() : 0;
  bool ok = indices.ndim() > batch_dims && data.ndim() > batch_dims && k >= 1 &&
            k <= data.ndim() - batch_dims;
  for (int64_t d = 0; ok && d < batch_dims; ++d) ok = indices.shape[d] == data.shape[d];
  if (!ok) {
    NodeError(n, "indices " + indices.ToString() + " must end in tuples of 1.." +
                     std::to_string(data.ndim() - batch_dims) + " indices into data " +
                     data.ToString() + " (batch_dims " + std::to_string(batch_dims) +
                     ", whose axes the two share)");
  }
  return k;
}

Types GatherNDRule(const Node& n, const Types& in) {
  const int64_t b = n.GetInt("batch_dims");
  const int64_t k = TupleLength(n, in[0], in[1], b);
  std::vector<int64_t> out(in[1].shape.begin(), in[1].shape.end() - 1);
  out.insert(out.end(), in[0].shape.begin() + b + k, in[0].shape.end());
  return {TensorType{out, in[0].dtype}};
}

Types ScatterNDRule(const Node& n, const Types& in) {
  const int64_t k = TupleLength(n, in[0], in[1], 0);
  std::vector<int64_t> want(in[1].shape.begin(), in[1].shape.end() - 1);
  want.insert(want.end(), in[0].shape.begin() + k, in[0].shape.end());
  if (in[2].shape != want || in[2].dtype != in[0].dtype) {
    NodeError(n, "updates must be " + TensorType{want, in[0].dtype}.ToString() + ", got " +
                     in[2].ToString());
  }
  return {in[0]};
}

// OneHot (canonical: indices, values [off, on]): "depth" classes inserted at "axis", of the
// values' dtype.
Types OneHotRule(const Node& n, const Types& in) {
  std::vector<int64_t> out = in[0].shape;
  out.insert(out.begin() + n.GetInt("axis"), n.GetInt("depth"));
  return {TensorType{out, in[1].dtype}};
}

Types EyeLikeRule(const Node& n, const Types& in) {
  if (in[0].ndim() != 2) NodeError(n, "expected a 2-D input, got " + in[0].ToString());
  return {TensorType{in[0].shape, DTypeFromString(n.GetString("__dtype"))}};
}

// GridSample: X [N, C, H, W] sampled at grid [N, Ho, Wo, 2] gives [N, C, Ho, Wo].
Types GridSampleRule(const Node& n, const Types& in) {
  const TensorType &x = in[0], &grid = in[1];
  if (x.ndim() != 4 || grid.ndim() != 4 || grid.shape[3] != 2 || grid.shape[0] != x.shape[0]) {
    NodeError(n, "expected X [N, C, H, W] and grid [N, H_out, W_out, 2], got " + x.ToString() +
                     " and " + grid.ToString());
  }
  return {TensorType{{x.shape[0], x.shape[1], grid.shape[1], grid.shape[2]}, x.dtype}};
}

// Det: one value per trailing square matrix.
Types DetRule(const Node& n, const Types& in) {
  const TensorType& x = in[0];
  if (x.ndim() < 2 || x.shape[x.ndim() - 1] != x.shape[x.ndim() - 2] || x.dtype.code != kDLFloat) {
    NodeError(n, "expected float square matrices [..., M, M], got " + x.ToString());
  }
  return {TensorType{std::vector<int64_t>(x.shape.begin(), x.shape.end() - 2), x.dtype}};
}

Types TopKRule(const Node& n, const Types& in) {
  TensorType values = in[0];
  values.shape.at(static_cast<size_t>(n.GetInt("axis"))) = n.GetInt("k");
  return {values, TensorType{values.shape, kInt64}};
}

Types TileRule(const Node& n, const Types& in) {
  auto r = n.GetInts("repeats");
  TensorType t = in[0];
  if (static_cast<int64_t>(r.size()) != t.ndim()) NodeError(n, "repeats length != rank");
  for (size_t i = 0; i < r.size(); ++i) t.shape[i] *= r[i];
  return {t};
}

Types PadRule(const Node& n, const Types& in) {
  auto p = n.GetInts("pads");
  TensorType t = in[0];
  int64_t r = t.ndim();
  if (static_cast<int64_t>(p.size()) != 2 * r) NodeError(n, "pads length != 2 * rank");
  // As ONNX Runtime: reflect mirrors at most dim - 1 elements, edge needs an element to repeat.
  const std::string mode = n.GetString("mode", "constant");
  for (int64_t i = 0; i < r; ++i) {
    const int64_t dim = t.shape[i], pad = std::max(p[i], p[r + i]);
    const std::string what = "mode '" + mode + "' pads axis " + std::to_string(i) + " of " +
                             t.ToString() + " by " + std::to_string(pad);
    if (mode == "reflect" && pad > 0 && pad > dim - 1) {
      NodeError(n, what + ", more than its size - 1 (" + std::to_string(dim - 1) + ")");
    }
    if (mode == "edge" && pad > 0 && dim == 0) NodeError(n, what + ", which has no element");
  }
  for (int64_t i = 0; i < r; ++i) t.shape[i] += p[i] + p[r + i];
  return {t};
}

Types DepthToSpaceRule(const Node& n, const Types& in) {
  int64_t b = n.GetInt("blocksize");
  TensorType t = in[0];
  if (t.ndim() != 4 || t.shape[1] % (b * b))
    NodeError(n, "expected NCHW with C % blocksize^2 == 0");
  t.shape = {t.shape[0], t.shape[1] / (b * b), t.shape[2] * b, t.shape[3] * b};
  return {t};
}

// PhaseInterleave (ConvTranspose as a Conv, transform/conv_transpose_as_conv.cc): the phases'
// channels interleaved into space, then cropped to "out_size" from "crop". In NCHW[x]c (input
// and output) each phase's channels of a group must fill whole blocks.
Types PhaseInterleaveRule(const Node& n, const Types& in) {
  const auto s = n.GetInts("strides");
  const auto crop = n.GetInts("crop");
  const auto size = n.GetInts("out_size");
  const int64_t group = n.GetInt("group");
  const int64_t block = LayoutAttrBlock(n, kDataLayoutAttr);
  const TensorType x = Unblocked(n, in[0], block);
  if (x.ndim() != 4 || s.size() != 2 || crop.size() != 2 || size.size() != 2 || group <= 0 ||
      x.shape[1] % (s[0] * s[1] * group) != 0) {
    NodeError(n,
              "expected NCHW with C % (strides[0] * strides[1] * group) == 0, got " + x.ToString());
  }
  const int64_t cg = x.shape[1] / (s[0] * s[1] * group);
  if (block != 0 && cg % block != 0) {
    NodeError(n, "a group's " + std::to_string(cg) + " channels per phase do not fill blocks of " +
                     std::to_string(block));
  }
  for (size_t i = 0; i < 2; ++i) {
    if (crop[i] < 0 || crop[i] + size[i] > x.shape[2 + i] * s[i]) {
      NodeError(n, "crop outside the interleaved " + x.ToString());
    }
  }
  const TensorType out{{x.shape[0], x.shape[1] / (s[0] * s[1]), size[0], size[1]}, x.dtype};
  return {Blocked(n, out, block)};
}

Types SpaceToDepthRule(const Node& n, const Types& in) {
  int64_t b = n.GetInt("blocksize");
  TensorType t = in[0];
  if (t.ndim() != 4 || t.shape[2] % b || t.shape[3] % b)
    NodeError(n, "H and W must divide by blocksize");
  t.shape = {t.shape[0], t.shape[1] * b * b, t.shape[2] / b, t.shape[3] / b};
  return {t};
}

// Inputs [first, in.size()) of a per-channel normalization (BatchNormalization's scale, B, mean
// and var; InstanceNormalization's scale and B) must each hold one value per channel of input 0:
// the kernel reads them at the channel's index (2^20 channels against 3 scales read past them).
void CheckPerChannel(const Node& n, const Types& in, size_t first, const char* const* names) {
  if (in[0].ndim() < 2) {
    NodeError(n, "expected input X of rank >= 2 (N, C, ...), got " + in[0].ToString());
  }
  const std::vector<int64_t> want{in[0].shape[1]};
  for (size_t i = first; i < in.size(); ++i) {
    if (n.HasInput(i) && in[i].shape != want) {
      NodeError(n, std::string("input ") + names[i - first] + " must have shape [" +
                       std::to_string(want[0]) + "] (one value per channel of X " +
                       in[0].ToString() + "), got " + in[i].ToString());
    }
  }
}

Types BatchNormRule(const Node& n, const Types& in) {
  static const char* const kNames[] = {"scale", "B", "input_mean", "input_var"};
  CheckPerChannel(n, in, 1, kNames);
  return {in[0]};
}

Types InstanceNormRule(const Node& n, const Types& in) {
  static const char* const kNames[] = {"scale", "B"};
  CheckPerChannel(n, in, 1, kNames);
  return {in[0]};
}

Types LayerNormRule(const Node& n, const Types& in) {
  Types out{in[0]};
  int64_t axis = n.GetInt("axis");
  if (axis < 0) axis += in[0].ndim();  // the rule may run before canonicalization normalizes it
  // Scale and B broadcast to the normalized shape X[axis:] (from the right, one way).
  for (size_t i = 1; i < in.size(); ++i) {
    if (!n.HasInput(i)) continue;
    const std::vector<int64_t>& p = in[i].shape;
    bool fits = static_cast<int64_t>(p.size()) <= in[0].ndim() - axis;
    for (size_t k = 0; fits && k < p.size(); ++k) {
      const int64_t d = in[0].shape[in[0].shape.size() - p.size() + k];
      fits = p[k] == 1 || p[k] == d;
    }
    if (!fits) {
      NodeError(n, std::string(i == 1 ? "Scale" : "B") + " " + in[i].ToString() +
                       " does not broadcast to the normalized shape of X " + in[0].ToString() +
                       " from axis " + std::to_string(axis));
    }
  }
  TensorType stat{in[0].shape, kFloat32};
  for (int64_t i = axis; i < stat.ndim(); ++i) stat.shape[i] = 1;
  for (size_t i = 1; i < n.outputs.size(); ++i) out.push_back(stat);
  return out;
}

Types DropoutRule(const Node& n, const Types& in) {
  Types out{in[0]};
  if (n.outputs.size() > 1) out.push_back(TensorType{in[0].shape, kBool});
  return out;
}

void Unary(const char* name, std::initializer_list<std::pair<const char*, double>> defaults = {}) {
  OpDef& d = OpRegistry::Global()->Mutable(name);
  d.set_pattern(OpPattern::kElemWise).set_infer_type(SameAsFirst).set_num_inputs(1, 1);
  for (const auto& [k, v] : defaults) d.set_attr_default(k, v);
}

void Binary(const char* name, FInferType rule = Broadcast) {
  OpRegistry::Global()
      ->Mutable(name)
      .set_pattern(OpPattern::kBroadcast)
      .set_infer_type(std::move(rule))
      .set_num_inputs(2, 2);
}

void Op(const char* name, OpPattern p, FInferType rule, int min_in, int max_in) {
  OpRegistry::Global()
      ->Mutable(name)
      .set_pattern(p)
      .set_infer_type(std::move(rule))
      .set_num_inputs(min_in, max_in);
}

// Simplify's no-op tests (OpDef::is_no_op): the op forwards its input when the types match and
// its attributes move nothing.
bool AllEqual(const std::vector<int64_t>& v, int64_t x) {
  return std::all_of(v.begin(), v.end(), [x](int64_t e) { return e == x; });
}

FIsNoOp SameTypeAnd(bool (*moves_nothing)(const Node&)) {
  return [moves_nothing](const Node& n, const TensorType& in, const TensorType& out) {
    return in == out && moves_nothing(n);
  };
}

void RegisterNoOps() {
  auto reg = [](const char* op, FIsNoOp fn) { OpRegistry::Global()->Mutable(op).set_is_no_op(fn); };
  for (const char* op : {"Identity", "Dropout"}) {
    reg(op, [](const Node&, const TensorType&, const TensorType&) { return true; });
  }
  for (const char* op : {"Cast", "Expand", "Reshape"}) {
    reg(op, SameTypeAnd([](const Node&) { return true; }));
  }
  reg("Concat", SameTypeAnd([](const Node& n) { return n.inputs.size() == 1; }));
  reg("Transpose", SameTypeAnd([](const Node& n) {
        auto perm = n.GetInts("perm");
        for (size_t i = 0; i < perm.size(); ++i) {
          if (perm[i] != static_cast<int64_t>(i)) return false;
        }
        return true;
      }));
  reg("Slice", SameTypeAnd([](const Node& n) {
        return AllEqual(n.GetInts("starts"), 0) && AllEqual(n.GetInts("steps"), 1);
      }));
  reg("Pad", SameTypeAnd([](const Node& n) { return AllEqual(n.GetInts("pads"), 0); }));
  reg("Tile", SameTypeAnd([](const Node& n) { return AllEqual(n.GetInts("repeats"), 1); }));
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze"}) {
    OpRegistry::Global()->Mutable(op).set_reshape_like();
  }
}

const bool kRegistered = [] {
  for (const char* u :
       {"Abs",   "Neg",        "Relu",  "Sigmoid",   "Tanh",     "Exp",      "Log",
        "Sqrt",  "Reciprocal", "Erf",   "Softplus",  "Softsign", "Floor",    "Ceil",
        "Round", "Sign",       "Not",   "Sin",       "Cos",      "Identity", "HardSwish",
        "Mish",  "Tan",        "Asin",  "Acos",      "Atan",     "Sinh",     "Cosh",
        "Asinh", "Acosh",      "Atanh", "BitwiseNot"}) {
    Unary(u);
  }
  Unary("Shrink", {{"lambd", 0.5}, {"bias", 0.0}});
  for (const char* test : {"IsNaN", "IsInf"}) {
    Op(
        test, OpPattern::kElemWise,
        [](const Node&, const Types& in) {
          return Types{TensorType{in[0].shape, kBool}};
        },
        1, 1);
  }
  OpRegistry::Global()
      ->Mutable("IsInf")
      .set_attr_default("detect_positive", int64_t{1})
      .set_attr_default("detect_negative", int64_t{1});
  Unary("Elu", {{"alpha", 1.0}});
  Unary("Swish", {{"alpha", 1.0}});
  Unary("Celu", {{"alpha", 1.0}});
  Unary("LeakyRelu", {{"alpha", 0.01}});
  Unary("ThresholdedRelu", {{"alpha", 1.0}});
  Unary("HardSigmoid", {{"alpha", 0.2}, {"beta", 0.5}});
  Unary("Selu", {{"alpha", 1.67326319217681884765625}, {"gamma", 1.05070102214813232421875}});
  Unary("Clip");
  OpRegistry::Global()->Mutable("Gelu").set_attr_default("approximate", std::string("none"));
  Unary("Gelu");
  OpRegistry::Global()->Mutable("Identity").set_pattern(OpPattern::kInjective);
  Op("Cast", OpPattern::kElemWise, CastRule, 1, 1);
  Op("BitCast", OpPattern::kElemWise, CastRule, 1, 1);
  for (const char* b : {"Add", "Sub", "Mul", "Div", "Max", "Min", "And", "Or", "Xor", "Mod",
                        "PRelu", "BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor"}) {
    Binary(b);
  }
  Binary("Pow", PowRule);
  for (const char* c : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    Binary(c, Compare);
  Op("Where", OpPattern::kBroadcast, WhereRule, 3, 3);
  // Inputs 4 and 5: an integer conv's run-time zero point and weight sums (ConvRule checks).
  Op("Conv", OpPattern::kOutEWiseFusable, ConvRule, 2, 5);
  OpRegistry::Global()->Mutable("Conv").set_attr_default("group", int64_t{1});
  Op("LayoutTransform", OpPattern::kInjective, LayoutTransformRule, 1, 1);
  Op("ConvTranspose", OpPattern::kOutEWiseFusable, ConvTransposeRule, 2, 3);
  OpRegistry::Global()->Mutable("ConvTranspose").set_attr_default("group", int64_t{1});
  Op("MaxPool", OpPattern::kOutEWiseFusable, PoolRule, 1, 1);
  Op("AveragePool", OpPattern::kOutEWiseFusable, PoolRule, 1, 1);
  OpRegistry::Global()
      ->Mutable("AveragePool")
      .set_attr_default("count_include_pad", int64_t{0})
      .set_attr_default("ceil_mode", int64_t{0});
  OpRegistry::Global()->Mutable("MaxPool").set_attr_default("ceil_mode", int64_t{0});
  Op("GlobalAveragePool", OpPattern::kOutEWiseFusable, GlobalPoolRule, 1, 1);
  Op("GlobalMaxPool", OpPattern::kOutEWiseFusable, GlobalPoolRule, 1, 1);
  Op("Gemm", OpPattern::kOutEWiseFusable, GemmRule, 2, 3);
  OpRegistry::Global()
      ->Mutable("Gemm")
      .set_attr_default("alpha", 1.0)
      .set_attr_default("beta", 1.0)
      .set_attr_default("transA", int64_t{0})
      .set_attr_default("transB", int64_t{0});
  Op("MatMul", OpPattern::kOutEWiseFusable, MatMulRule, 2, 2);
  for (const char* r :
       {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    Op(r, OpPattern::kCommReduce, ReduceRule, 1, 2);
  }
  for (const char* a : {"ArgMax", "ArgMin"}) {
    Op(a, OpPattern::kCommReduce, ArgRule, 1, 1);
    OpRegistry::Global()
        ->Mutable(a)
        .set_attr_default("axis", int64_t{0})
        .set_attr_default("keepdims", int64_t{1})
        .set_attr_default("select_last_index", int64_t{0});
  }
  for (const char* s : {"Softmax", "LogSoftmax", "Hardmax"})
    Op(s, OpPattern::kOpaque, SameAsFirst, 1, 1);
  Op("BatchNormalization", OpPattern::kOpaque, BatchNormRule, 5, 5);
  OpRegistry::Global()->Mutable("BatchNormalization").set_attr_default("epsilon", 1e-5);
  Op("InstanceNormalization", OpPattern::kOpaque, InstanceNormRule, 3, 3);
  OpRegistry::Global()->Mutable("InstanceNormalization").set_attr_default("epsilon", 1e-5);
  // Canonicalize rewrites it into InstanceNormalization; the entry admits it past the importer.
  Op("GroupNormalization", OpPattern::kOpaque, SameAsFirst, 3, 3);
  Op("RMSNormalization", OpPattern::kOpaque, SameAsFirst, 2, 2);
  Op("RotaryEmbedding", OpPattern::kOpaque, SameAsFirst, 3, 4);
  Op("Attention", OpPattern::kOpaque, SameAsFirst, 3, 7);
  Op("CenterCropPad", OpPattern::kOpaque, SameAsFirst, 2, 2);
  Op("AffineGrid", OpPattern::kOpaque, SameAsFirst, 2, 2);
  Op("LayerNormalization", OpPattern::kOpaque, LayerNormRule, 2, 3);
  OpRegistry::Global()
      ->Mutable("LayerNormalization")
      .set_attr_default("epsilon", 1e-5)
      .set_attr_default("axis", int64_t{-1});
  Op("LRN", OpPattern::kOpaque, SameAsFirst, 1, 1);
  OpRegistry::Global()
      ->Mutable("LRN")
      .set_attr_default("alpha", 1e-4)
      .set_attr_default("beta", 0.75)
      .set_attr_default("bias", 1.0);
  Op("Dropout", OpPattern::kElemWise, DropoutRule, 1, 3);
  for (const char* s :
       {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Expand", "Slice", "Resize"}) {
    Op(s, OpPattern::kInjective, OutputTypeIsAttr, 1, 1);
  }
  OpRegistry::Global()->Mutable("Expand").set_pattern(OpPattern::kBroadcast);
  Op("Transpose", OpPattern::kInjective, TransposeRule, 1, 1);
  Op("Concat", OpPattern::kInjective, ConcatRule, 1, 1 << 20);
  Op("Split", OpPattern::kInjective, SplitRule, 1, 1);
  Op("Gather", OpPattern::kInjective, GatherRule, 2, 2);
  Op("Tile", OpPattern::kInjective, TileRule, 1, 1);
  Op("GatherElements", OpPattern::kInjective, GatherElementsRule, 2, 2);
  Op("GatherND", OpPattern::kInjective, GatherNDRule, 2, 2);
  OpRegistry::Global()->Mutable("GatherND").set_attr_default("batch_dims", int64_t{0});
  Op("OneHot", OpPattern::kInjective, OneHotRule, 2, 2);
  Op("EyeLike", OpPattern::kInjective, EyeLikeRule, 1, 1);
  OpRegistry::Global()->Mutable("EyeLike").set_attr_default("k", int64_t{0});
  Op("Trilu", OpPattern::kInjective, SameAsFirst, 1, 1);
  Op("GridSample", OpPattern::kInjective, GridSampleRule, 2, 2);
  Op("ReverseSequence", OpPattern::kInjective, SameAsFirst, 2, 2);
  // Canonical: the output shape in "__out_shape", the output_shape input gone.
  Op("MaxUnpool", OpPattern::kOpaque, OutputTypeIsAttr, 2, 2);
  Op("Col2Im", OpPattern::kOpaque, OutputTypeIsAttr, 1, 3);
  Op("Det", OpPattern::kOpaque, DetRule, 1, 1);
  Op("RoiAlign", OpPattern::kOpaque, OutputTypeIsAttr, 3, 3);
  Op("DeformableColumns", OpPattern::kOpaque, OutputTypeIsAttr, 2, 3);
  Op("DeformConv", OpPattern::kOpaque, SameAsFirst, 3, 5);
  OpRegistry::Global()
      ->Mutable("GridSample")
      .set_attr_default("mode", std::string("bilinear"))
      .set_attr_default("padding_mode", std::string("zeros"))
      .set_attr_default("align_corners", int64_t{0});
  OpRegistry::Global()->Mutable("Trilu").set_attr_default("upper", int64_t{1});
  // Kernels of their own, written as loops (compiler/ops/loop_kernels.cc).
  for (const char* scan : {"CumSum", "CumProd"}) {
    Op(scan, OpPattern::kOpaque, SameAsFirst, 1, 1);
    OpRegistry::Global()
        ->Mutable(scan)
        .set_attr_default("exclusive", int64_t{0})
        .set_attr_default("reverse", int64_t{0});
  }
  Op("TopK", OpPattern::kOpaque, TopKRule, 1, 1);
  OpRegistry::Global()
      ->Mutable("TopK")
      .set_attr_default("largest", int64_t{1})
      .set_attr_default("sorted", int64_t{1});
  Op("ScatterElements", OpPattern::kOpaque, ScatterElementsRule, 3, 3);
  Op("ScatterND", OpPattern::kOpaque, ScatterNDRule, 3, 3);
  Op("TensorScatter", OpPattern::kOpaque, SameAsFirst, 2, 3);
  for (const char* s : {"ScatterElements", "ScatterND"}) {
    OpRegistry::Global()->Mutable(s).set_attr_default("reduction", std::string("none"));
  }
  Op("Pad", OpPattern::kInjective, PadRule, 1, 1);
  Op("DepthToSpace", OpPattern::kInjective, DepthToSpaceRule, 1, 1);
  OpRegistry::Global()->Mutable("DepthToSpace").set_attr_default("mode", std::string("DCR"));
  Op("SpaceToDepth", OpPattern::kInjective, SpaceToDepthRule, 1, 1);
  Op("PhaseInterleave", OpPattern::kInjective, PhaseInterleaveRule, 1, 1);
  RegisterNoOps();
  return true;
}();

}  // namespace

// Cast's target dtype: the canonicalizer stores the DLPack dtype string in "__dtype".
namespace {
Types CastRule(const Node& n, const Types& in) {
  return {TensorType{in[0].shape, DTypeFromString(n.GetString("__dtype"))}};
}
}  // namespace

bool OpsRegistered() { return kRegistered; }

}  // namespace compiler
}  // namespace ember
