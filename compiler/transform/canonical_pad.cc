// Canonical form of Pad: full `pads` (begin and end for every axis), `value` and `mode` as
// attributes whatever the opset; a constant value known only at run time becomes a zero Pad and
// a Where over a constant inside-mask. CenterCropPad (opset 18) becomes a Slice and a zero Pad.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <set>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

// Pad-18's `axes` input names the axes `pads` covers; the other axes get no padding.
void PadAxesToFullPads(Node& n, CanonicalizeContext* ctx) {
  const int64_t r = ctx->Rank(n, 0);
  std::vector<int64_t> axes = ctx->ConstInput(n, 3, "axes")->ToIntVector();
  std::vector<int64_t> pads = ctx->ConstInput(n, 1, "pads")->ToIntVector();
  const size_t k = axes.size();
  if (pads.size() != 2 * k) {
    NodeError(n, "pads holds " + std::to_string(pads.size()) + " values, expected " +
                     std::to_string(2 * k) + " (begin and end for each of axes " +
                     ShapeToString(axes) + ")");
  }
  std::vector<int64_t> full(static_cast<size_t>(2 * r), 0);
  for (size_t i = 0; i < k; ++i) {
    const int64_t a = NormalizeAxis(n, axes[i], r, "axes entry");
    full[a] = pads[i];
    full[r + a] = pads[k + i];
  }
  n.inputs[1] = ctx->Constant(n.name + "_pads", MakeInt64Tensor(full));
  ctx->DropInputsFrom(n, 3);
}

// Pad whose constant_value arrives at run time: zero-pad, then Where(inside-mask, padded, value).
void PadWithRunTimeValue(Node n, CanonicalizeContext* ctx) {
  auto pads = ctx->ConstInput(n, 1, "pads")->ToIntVector();
  const TensorType x = ctx->TypeOf(n.inputs[0]);  // a copy: emitting nodes grows the value table
  int64_t r = x.ndim();
  if (static_cast<int64_t>(pads.size()) != 2 * r) NodeError(n, "pads length != 2 * rank");
  int value = n.inputs[2];
  int padded = ctx->Emit("Pad", n.name + "_zero", {n.inputs[0]},
                         {{"pads", pads}, {"mode", std::string("constant")}, {"value", 0.0}});
  const TensorType pt = ctx->TypeOf(padded);
  if (pt.NumElements() > kMaxFoldElements) {
    NodeUnsupported(n, "a constant_value computed at run time on an output of " + pt.ToString() +
                           ": its inside-mask is made at compile time, up to " +
                           std::to_string(kMaxFoldElements) + " elements");
  }
  auto mask = std::make_shared<HostTensor>(TensorType{pt.shape, kBool});
  for (int64_t i = 0; i < mask->NumElements(); ++i) {
    int64_t rem = i;
    bool inside = true;
    for (int64_t d = r - 1; d >= 0; --d) {
      int64_t c = rem % pt.shape[d] - pads[d];
      rem /= pt.shape[d];
      inside = inside && c >= 0 && c < x.shape[d];
    }
    mask->SetFromInt(i, inside ? 1 : 0);
  }
  int m = ctx->Constant(n.name + "_inside", mask);
  ctx->EmitInto(Node{"Where", n.name, {}, {m, padded, value}, n.outputs});
}

void PadOp(Node n, CanonicalizeContext* ctx) {
  const int64_t opset = ctx->opset();
  if (opset >= 18 && n.HasInput(3)) PadAxesToFullPads(n, ctx);
  if (opset >= 11 && n.HasInput(2) && !ctx->graph().value(n.inputs[2]).is_constant() &&
      n.GetString("mode", "constant") == "constant" && !n.HasInput(3)) {
    PadWithRunTimeValue(std::move(n), ctx);
    return;
  }
  if (opset >= 11) {
    n.attrs["pads"] = ctx->ConstInput(n, 1, "pads")->ToIntVector();
    double v = 0;
    if (auto c = ctx->ConstInput(n, 2, "constant_value")) {
      v = c->NumElements() ? c->GetAsDouble(0) : 0;
    }
    n.attrs["value"] = v;
  } else if (opset < 2) {
    n.attrs["pads"] = n.GetInts("paddings");
  }
  ctx->DropInputsFrom(n, 1);
  n.attrs["value"] = n.GetFloat("value", 0.0);
  std::string mode = n.GetString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") {
    NodeUnsupported(n, "mode '" + mode + "' (valid: constant, reflect, edge, wrap)");
  }
  n.attrs["mode"] = mode;
  ctx->EmitInto(std::move(n));
}

// CenterCropPad: each axis in `axes` (all by default) cropped to its target size about its
// centre, or zero-padded about it; an odd difference puts the extra row at the end.
void CenterCropPadOp(Node n, CanonicalizeContext* ctx) {
  OnnxExpander e(n, ctx);
  const TensorType x = ctx->TypeOf(n.inputs.at(0));
  const std::vector<int64_t> sizes = ctx->RequiredConstInput(n, 1, "shape")->ToIntVector();
  std::vector<int64_t> axes = n.GetInts("axes", {});
  if (!n.HasAttr("axes")) {
    for (int64_t d = 0; d < x.ndim(); ++d) axes.push_back(d);
  }
  if (sizes.size() != axes.size()) {
    NodeError(n, "shape must hold one size per axis (" + std::to_string(axes.size()) + "), got " +
                     std::to_string(sizes.size()));
  }
  const size_t rank = static_cast<size_t>(x.ndim());
  std::vector<int64_t> starts(rank, 0), ends = x.shape, all(rank), pads(2 * rank, 0);
  std::set<int64_t> seen;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = NormalizeAxis(n, axes[i], x.ndim(), "axes");
    if (!seen.insert(axis).second) NodeError(n, "axis " + std::to_string(axis) + " is repeated");
    const size_t a = static_cast<size_t>(axis);
    const int64_t dim = x.shape[a], size = sizes[i];
    if (size < 0 || size > kMaxFoldElements) {
      NodeError(n, "shape holds a size outside 0.." + std::to_string(kMaxFoldElements) + ": " +
                       std::to_string(size));
    }
    if (size < dim) {
      starts[a] = (dim - size) / 2;
      ends[a] = starts[a] + size;
    } else {
      pads[a] = (size - dim) / 2;
      pads[a + rank] = size - dim - pads[a];
    }
  }
  for (size_t d = 0; d < rank; ++d) all[d] = static_cast<int64_t>(d);
  int v = n.inputs[0];
  if (starts != std::vector<int64_t>(rank, 0) || ends != x.shape) {
    v = e.Op("Slice", {v, e.Ints(starts), e.Ints(ends), e.Ints(all)});
  }
  if (pads != std::vector<int64_t>(2 * rank, 0)) {
    e.OpInto(n.outputs.at(0), "Pad", {v, e.Ints(pads)});
  } else {
    e.OpInto(n.outputs.at(0), "Identity", {v});
  }
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Pad", PadOp);
EMBER_REGISTER_OP_CANONICALIZE("CenterCropPad", CenterCropPadOp);

}  // namespace compiler
}  // namespace ember
