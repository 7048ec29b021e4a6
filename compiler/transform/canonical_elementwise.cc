// Canonical forms of the elementwise ops whose ONNX spelling varies: Cast/CastLike and BitCast (the
// target dtype as "__dtype"), Clip (bounds as attributes, or Max/Min when computed at run time),
// inference Dropout (Identity) and the variadic Sum/Mean/Max/Min (chains of binary ops).
#include <ember/compiler/ir/op_registry.h>

#include <limits>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

void CastOp(Node n, CanonicalizeContext* ctx) {
  n.attrs["__dtype"] = DTypeToString(
      OnnxToDType(static_cast<int32_t>(n.GetInt("to")), n.Describe() + ": attribute 'to'"));
  ctx->EmitInto(std::move(n));
}

// BitCast (opset 26): the bits kept, read as `to`, which must be as wide (bool counts one byte).
void BitCastOp(Node n, CanonicalizeContext* ctx) {
  const DLDataType from = ctx->TypeOf(n.inputs.at(0)).dtype;
  const DLDataType to =
      OnnxToDType(static_cast<int32_t>(n.GetInt("to")), n.Describe() + ": attribute 'to'");
  auto width = [](DLDataType t) { return t.bits == 1 ? 8 : static_cast<int>(t.bits); };
  if (width(from) != width(to)) {
    NodeError(n, "attribute 'to' must name a type as wide as the input's " + DTypeToString(from) +
                     " (" + std::to_string(width(from)) + " bits), got " + DTypeToString(to) +
                     " (" + std::to_string(width(to)) + " bits)");
  }
  n.attrs["__dtype"] = DTypeToString(to);
  ctx->EmitInto(std::move(n));
}

void CastLikeOp(Node n, CanonicalizeContext* ctx) {
  n.op = "Cast";
  n.attrs["to"] = int64_t{DTypeToOnnx(ctx->TypeOf(n.inputs[1]).dtype)};
  ctx->DropInputsFrom(n, 1);
  CastOp(std::move(n), ctx);
}

void ClipOp(Node n, CanonicalizeContext* ctx) {
  double lo = -std::numeric_limits<double>::infinity(), hi = -lo;
  // The bounds are scalars: an empty one was read past its end, a longer one broadcast silently.
  for (size_t i : {1, 2}) {
    if (ctx->opset() < 11 || !n.HasInput(i)) continue;
    const TensorType t = ctx->TypeOf(n.inputs[i]);
    if (t.NumElements() != 1) {
      NodeError(n, std::string("input ") + (i == 1 ? "min" : "max") + " must hold one value, got " +
                       t.ToString());
    }
  }
  bool runtime_bounds =
      ctx->opset() >= 11 && ((n.HasInput(1) && !ctx->graph().value(n.inputs[1]).is_constant()) ||
                             (n.HasInput(2) && !ctx->graph().value(n.inputs[2]).is_constant()));
  if (runtime_bounds) {
    // Bounds computed at run time: Clip(x, lo, hi) = Min(Max(x, lo), hi).
    int acc = n.inputs[0];
    if (n.HasInput(1)) acc = ctx->Emit("Max", n.name + "_min", {acc, n.inputs[1]});
    if (n.HasInput(2)) {
      ctx->EmitInto(Node{"Min", n.name + "_max", {}, {acc, n.inputs[2]}, n.outputs});
    } else {
      ctx->EmitInto(Node{"Identity", n.name, {}, {acc}, n.outputs});
    }
    return;
  }
  if (ctx->opset() >= 11) {
    if (auto c = ctx->ConstInput(n, 1, "min")) lo = c->GetAsDouble(0);
    if (auto c = ctx->ConstInput(n, 2, "max")) hi = c->GetAsDouble(0);
  } else {
    lo = n.GetFloat("min", lo);
    hi = n.GetFloat("max", hi);
  }
  ctx->DropInputsFrom(n, 1);
  n.attrs = {{"min", lo}, {"max", hi}};
  ctx->EmitInto(std::move(n));
}

// Inference Dropout is Identity; its mask output, when wanted, is all true.
void DropoutOp(Node n, CanonicalizeContext* ctx) {
  if (ctx->opset() >= 12 && n.HasInput(2) &&
      ctx->OneValueInput(n, 2, "training_mode")->GetAsInt(0) != 0) {
    NodeUnsupported(n, "training-mode Dropout is not supported");
  }
  ctx->DropInputsFrom(n, 1);
  if (n.outputs.size() > 1) {
    const std::vector<int64_t> shape = ctx->TypeOf(n.inputs[0]).shape;
    ctx->SetFilledOutput(n, n.outputs[1], shape, *MakeScalarTensor(kBool, 1));
    n.outputs.resize(1);
  }
  n.op = "Identity";
  n.attrs.clear();
  ctx->EmitInto(std::move(n));
}

// Sum/Mean/Max/Min with any number of inputs -> a chain of `bin`; Mean divides at the end.
void Variadic(Node n, const char* bin, bool mean, CanonicalizeContext* ctx) {
  if (n.inputs.empty()) NodeError(n, "needs at least one input");
  int acc = n.inputs[0];
  size_t last = n.inputs.size() - 1;
  for (size_t i = 1; i < n.inputs.size(); ++i) {
    if (i == last && !mean) {
      ctx->EmitInto(Node{bin, n.name, {}, {acc, n.inputs[i]}, n.outputs});
      return;
    }
    acc = ctx->Emit(bin, n.name + "_" + std::to_string(i), {acc, n.inputs[i]});
  }
  if (mean && n.inputs.size() > 1) {
    int c = ctx->Scalar(n.name + "_count", ctx->TypeOf(acc).dtype,
                        static_cast<double>(n.inputs.size()));
    ctx->EmitInto(Node{"Div", n.name, {}, {acc, c}, n.outputs});
    return;
  }
  ctx->EmitInto(Node{"Identity", n.name, {}, {acc}, n.outputs});
}

void SumOp(Node n, CanonicalizeContext* ctx) { Variadic(std::move(n), "Add", false, ctx); }
void MeanOp(Node n, CanonicalizeContext* ctx) { Variadic(std::move(n), "Add", true, ctx); }

// Max and Min of two inputs are the plain binary ops already.
void MaxMin(Node n, const char* bin, CanonicalizeContext* ctx) {
  if (n.inputs.size() == 2) {
    ctx->EmitInto(std::move(n));
    return;
  }
  Variadic(std::move(n), bin, false, ctx);
}

void MaxOp(Node n, CanonicalizeContext* ctx) { MaxMin(std::move(n), "Max", ctx); }
void MinOp(Node n, CanonicalizeContext* ctx) { MaxMin(std::move(n), "Min", ctx); }

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Cast", CastOp);
EMBER_REGISTER_OP_CANONICALIZE("BitCast", BitCastOp);
EMBER_REGISTER_OP_CANONICALIZE("CastLike", CastLikeOp);
EMBER_REGISTER_OP_CANONICALIZE("Clip", ClipOp);
EMBER_REGISTER_OP_CANONICALIZE("Dropout", DropoutOp);
EMBER_REGISTER_OP_CANONICALIZE("Sum", SumOp);
EMBER_REGISTER_OP_CANONICALIZE("Mean", MeanOp);
EMBER_REGISTER_OP_CANONICALIZE("Max", MaxOp);
EMBER_REGISTER_OP_CANONICALIZE("Min", MinOp);

}  // namespace compiler
}  // namespace ember
