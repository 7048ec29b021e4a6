// Canonical forms of the data-movement ops: shape, axes, starts/ends, repeats and split inputs
// become attributes (they must be constants: emberc compiles static shapes), axes are normalized
// and, where the output shape is not plain to see, it is stored as "__out_shape".
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <numeric>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

std::vector<int64_t> Fill(size_t n, int64_t v) { return std::vector<int64_t>(n, v); }

// Squeeze/Unsqueeze-13 take `axes` as an input.
std::vector<int64_t> AxesOf(Node& n, CanonicalizeContext* ctx) {
  if (ctx->opset() >= 13) ctx->IntsInputToAttr(n, 1, "axes");
  ctx->DropInputsFrom(n, 1);
  return n.GetInts("axes", {});
}

void EmitWithAxes(Node n, std::vector<int64_t> axes, std::vector<int64_t> out,
                  CanonicalizeContext* ctx) {
  std::sort(axes.begin(), axes.end());
  n.attrs["axes"] = axes;
  n.attrs["__out_shape"] = out;
  ctx->EmitInto(std::move(n));
}

void SqueezeOp(Node n, CanonicalizeContext* ctx) {
  std::vector<int64_t> axes = AxesOf(n, ctx);
  auto shape = ctx->TypeOf(n.inputs[0]).shape;
  int64_t r = static_cast<int64_t>(shape.size());
  if (axes.empty()) {
    for (int64_t i = 0; i < r; ++i) {
      if (shape[i] == 1) axes.push_back(i);
    }
  }
  for (auto& a : axes) {
    a = NormalizeAxis(n, a, r, "axes entry");
    if (shape[a] != 1)
      NodeError(n, "cannot squeeze axis " + std::to_string(a) + " of " + ShapeToString(shape));
  }
  std::vector<int64_t> out;
  for (int64_t i = 0; i < r; ++i) {
    if (std::find(axes.begin(), axes.end(), i) == axes.end()) out.push_back(shape[i]);
  }
  EmitWithAxes(std::move(n), std::move(axes), std::move(out), ctx);
}

void UnsqueezeOp(Node n, CanonicalizeContext* ctx) {
  std::vector<int64_t> axes = AxesOf(n, ctx);
  auto shape = ctx->TypeOf(n.inputs[0]).shape;
  int64_t orank = static_cast<int64_t>(shape.size() + axes.size());
  for (auto& a : axes) a = NormalizeAxis(n, a, orank, "axes entry");
  std::vector<int64_t> out;
  size_t k = 0;
  for (int64_t i = 0; i < orank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) {
      out.push_back(1);
    } else {
      out.push_back(shape.at(k++));
    }
  }
  EmitWithAxes(std::move(n), std::move(axes), std::move(out), ctx);
}

void ReshapeOp(Node n, CanonicalizeContext* ctx) {
  auto target =
      ctx->opset() >= 5 ? ctx->ConstInput(n, 1, "shape")->ToIntVector() : n.GetInts("shape");
  ctx->DropInputsFrom(n, 1);
  auto in = ctx->TypeOf(n.inputs[0]);
  bool allowzero = n.GetInt("allowzero", 0) != 0;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allowzero) {
      if (i >= in.shape.size()) NodeError(n, "shape entry 0 copies a dimension the input lacks");
      target[i] = in.shape[i];
    }
    if (target[i] < -1) {
      NodeError(n, "shape entry " + std::to_string(i) + " is " + std::to_string(target[i]) +
                       ": expected a size, 0 (copy) or -1 (infer), in " + ShapeToString(target));
    }
    if (target[i] == -1) {
      if (infer >= 0) NodeError(n, "more than one -1 in the target shape");
      infer = static_cast<int64_t>(i);
    } else if (__builtin_mul_overflow(known, target[i], &known)) {
      NodeError(n, "cannot reshape " + in.ToString() + " to " + ShapeToString(target) +
                       ": its sizes multiply past int64");
    }
  }
  if (infer >= 0) {
    if (known == 0 || in.NumElements() % known) {
      NodeError(n, "cannot reshape " + in.ToString() + " to " + ShapeToString(target));
    }
    target[infer] = in.NumElements() / known;
  }
  TensorType t{target, in.dtype};
  if (t.NumElements() != in.NumElements()) {
    NodeError(n, "cannot reshape " + in.ToString() + " to " + ShapeToString(target));
  }
  n.attrs = {{"__out_shape", target}};
  ctx->EmitInto(std::move(n));
}

void FlattenOp(Node n, CanonicalizeContext* ctx) {
  auto in = ctx->TypeOf(n.inputs[0]);
  int64_t r = in.ndim();
  int64_t axis = n.GetInt("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r) NodeError(n, "axis out of range");
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in.shape[i];
  n.attrs = {{"axis", axis}, {"__out_shape", std::vector<int64_t>{a, b}}};
  ctx->EmitInto(std::move(n));
}

void ExpandOp(Node n, CanonicalizeContext* ctx) {
  auto shape = ctx->ConstInput(n, 1, "shape")->ToIntVector();
  ctx->DropInputsFrom(n, 1);
  n.attrs["__out_shape"] = BroadcastShapes(n, ctx->TypeOf(n.inputs[0]).shape, shape);
  ctx->EmitInto(std::move(n));
}

// Full-rank starts, ends and steps, clamped into range, and the output shape.
void SliceOp(Node n, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs[0]);
  int64_t r = x.ndim();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx->opset() < 10) {
    starts = n.GetInts("starts");
    ends = n.GetInts("ends");
    axes = n.GetInts("axes", {});
  } else {
    starts = ctx->ConstInput(n, 1, "starts")->ToIntVector();
    ends = ctx->ConstInput(n, 2, "ends")->ToIntVector();
    if (auto c = ctx->ConstInput(n, 3, "axes")) axes = c->ToIntVector();
    if (auto c = ctx->ConstInput(n, 4, "steps")) steps = c->ToIntVector();
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps = Fill(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    NodeError(n, "starts, ends, axes and steps must have equal lengths");
  }
  std::vector<int64_t> fs = Fill(static_cast<size_t>(r), 0), fe = x.shape,
                       fst = Fill(static_cast<size_t>(r), 1), out = x.shape;
  std::vector<bool> sliced(static_cast<size_t>(r), false);  // ONNX: an axis at most once
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t a = NormalizeAxis(n, axes[i], r, "axes entry");
    if (sliced[static_cast<size_t>(a)]) {
      NodeError(n, "axes " + ShapeToString(axes) + " name axis " + std::to_string(a) + " twice");
    }
    sliced[static_cast<size_t>(a)] = true;
    int64_t dim = x.shape[a], st = steps[i];
    if (st == 0) NodeError(n, "slice step 0 on axis " + std::to_string(a));
    int64_t b = starts[i], e = ends[i];
    if (b < 0) b += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      b = std::clamp<int64_t>(b, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t len = st > 0 ? std::max<int64_t>(0, CeilDiv(e - b, st))
                         : std::max<int64_t>(0, CeilDiv(b - e, -st));
    fs[a] = b;
    fe[a] = e;
    fst[a] = st;
    out[a] = len;
  }
  ctx->DropInputsFrom(n, 1);
  n.attrs = {{"starts", fs}, {"ends", fe}, {"steps", fst}, {"__out_shape", out}};
  ctx->EmitInto(std::move(n));
}

void TileOp(Node n, CanonicalizeContext* ctx) {
  ctx->IntsInputToAttr(n, 1, "repeats");
  ctx->DropInputsFrom(n, 1);
  ctx->EmitInto(std::move(n));
}

void SplitOp(Node n, CanonicalizeContext* ctx) {
  int64_t r = ctx->Rank(n, 0);
  int64_t axis = NormalizeAxis(n, n.GetInt("axis", 0), r);
  std::vector<int64_t> split;
  if (ctx->opset() >= 13) {
    if (auto c = ctx->ConstInput(n, 1, "split")) split = c->ToIntVector();
  } else {
    split = n.GetInts("split", {});
  }
  ctx->DropInputsFrom(n, 1);
  int64_t dim = ctx->TypeOf(n.inputs[0]).shape[axis];
  int64_t parts = static_cast<int64_t>(n.outputs.size());
  // Split-18's num_outputs splits like opset 13 without `split`: ceil-sized parts, last smaller.
  if (n.HasAttr("num_outputs") && n.GetInt("num_outputs") != parts) {
    NodeError(n, "num_outputs is " + std::to_string(n.GetInt("num_outputs")) +
                     " but the node has " + std::to_string(parts) + " outputs");
  }
  if (split.empty()) {
    int64_t each = CeilDiv(dim, parts);
    for (int64_t i = 0; i < parts; ++i) split.push_back(std::min(each, dim - i * each));
  }
  if (std::accumulate(split.begin(), split.end(), int64_t{0}) != dim ||
      static_cast<int64_t>(split.size()) != parts) {
    NodeError(n, "split sizes do not add up to dimension " + std::to_string(dim));
  }
  n.attrs = {{"axis", axis}, {"split", split}};
  ctx->EmitInto(std::move(n));
}

void ConcatOp(Node n, CanonicalizeContext* ctx) {
  int64_t r = ctx->Rank(n, 0);
  if (!n.HasAttr("axis")) NodeError(n, "missing attribute 'axis'");
  n.attrs["axis"] = NormalizeAxis(n, n.GetInt("axis", 0), r);
  ctx->EmitInto(std::move(n));
}

void GatherOp(Node n, CanonicalizeContext* ctx) {
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", 0), ctx->Rank(n, 0));
  n.attrs["axis"] = axis;
  // Indices known at compile time are checked here, so the kernel never meets a bad one.
  ctx->CheckConstantIndices(n, 1, ctx->TypeOf(n.inputs[0]).shape.at(static_cast<size_t>(axis)),
                            "axis " + std::to_string(axis));
  ctx->EmitInto(std::move(n));
}

void TransposeOp(Node n, CanonicalizeContext* ctx) {
  int64_t r = ctx->Rank(n, 0);
  std::vector<int64_t> perm(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) perm[i] = r - 1 - i;
  perm = n.GetInts("perm", perm);
  for (auto& p : perm) p = NormalizeAxis(n, p, r, "perm entry");
  n.attrs["perm"] = perm;
  ctx->EmitInto(std::move(n));
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Squeeze", SqueezeOp);
EMBER_REGISTER_OP_CANONICALIZE("Unsqueeze", UnsqueezeOp);
EMBER_REGISTER_OP_CANONICALIZE("Reshape", ReshapeOp);
EMBER_REGISTER_OP_CANONICALIZE("Flatten", FlattenOp);
EMBER_REGISTER_OP_CANONICALIZE("Expand", ExpandOp);
EMBER_REGISTER_OP_CANONICALIZE("Slice", SliceOp);
EMBER_REGISTER_OP_CANONICALIZE("Tile", TileOp);
EMBER_REGISTER_OP_CANONICALIZE("Split", SplitOp);
EMBER_REGISTER_OP_CANONICALIZE("Concat", ConcatOp);
EMBER_REGISTER_OP_CANONICALIZE("Gather", GatherOp);
EMBER_REGISTER_OP_CANONICALIZE("Transpose", TransposeOp);

}  // namespace compiler
}  // namespace ember
