// Canonical form of Pad: full `pads` (begin and end for every axis), `value` and `mode` as
// attributes whatever the opset; a constant value known only at run time becomes a zero Pad and
// a Where over a constant inside-mask.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

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

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Pad", PadOp);

}  // namespace compiler
}  // namespace ember
