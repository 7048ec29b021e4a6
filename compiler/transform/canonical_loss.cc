// Canonical forms of NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (registered as their
// canonicalization rules): the gathers, selects and reductions they are made of. Models exported
// with their loss (an evaluation graph, a distillation head) carry them.
//
// For input [N, C, d1..dk] and target [N, d1..dk], element (n, d) of the loss is
// -input[n, target[n, d], d] * weight[target[n, d]]; an element whose target is ignore_index
// counts as 0 and weighs nothing. "none" keeps the loss per element, "sum" adds it up, "mean"
// divides the sum by the weights of the elements counted (their number without a weight input).
// Targets reach the input and the weight through GatherElements and Gather, whose run-time index
// checks refuse a target outside -C..C-1 with the node and the index.
#include <ember/compiler/ir/op_registry.h>

#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// The operands of a loss node, checked against each other before anything is emitted.
struct LossOperands {
  int input, target, weight;  // weight: kAbsentValue when not given
  std::vector<int64_t> input_shape, target_shape;
  DLDataType dtype;
  std::string reduction;
};

LossOperands CheckOperands(const Node& n, const char* input_name, const char* target_name,
                           CanonicalizeContext* ctx) {
  LossOperands o;
  o.input = n.inputs.at(0);
  o.target = n.inputs.at(1);
  o.weight = n.HasInput(2) ? n.inputs[2] : kAbsentValue;
  const TensorType& x = ctx->TypeOf(o.input);
  const TensorType& t = ctx->TypeOf(o.target);
  o.input_shape = x.shape;
  o.target_shape = t.shape;
  o.dtype = x.dtype;
  if (x.ndim() < 2) {
    NodeError(
        n, std::string("input '") + input_name + "' must be [N, C, d1..dk], got " + x.ToString());
  }
  std::vector<int64_t> expected = {x.shape[0]};
  expected.insert(expected.end(), x.shape.begin() + 2, x.shape.end());
  if (t.shape != expected || t.dtype.code != kDLInt) {
    NodeError(n, std::string("input '") + target_name + "' must be an integer tensor of shape " +
                     ShapeToString(expected) + " (the input's without C), got " + t.ToString());
  }
  if (o.weight != kAbsentValue) {
    const TensorType& w = ctx->TypeOf(o.weight);
    if (w.shape != std::vector<int64_t>{x.shape[1]} || w.dtype != x.dtype) {
      NodeError(n, "input 'weight' must be " + TensorType{{x.shape[1]}, x.dtype}.ToString() +
                       " (one weight per class), got " + w.ToString());
    }
  }
  o.reduction = n.GetString("reduction", "mean");
  if (o.reduction != "none" && o.reduction != "sum" && o.reduction != "mean") {
    NodeError(n, "reduction '" + o.reduction + "' (supported: none, sum, mean)");
  }
  return o;
}

// The loss of log-probabilities `log_prob` (the input's shape) into value `out`.
void EmitLoss(const Node& n, const LossOperands& o, int log_prob, int out,
              CanonicalizeContext* ctx) {
  const DLDataType index_type = ctx->TypeOf(o.target).dtype;
  // Ignored elements read class 0 (any class would do) and then count as nothing.
  int target = o.target, ignored = kAbsentValue;
  if (n.HasAttr("ignore_index")) {
    const double ignore = static_cast<double>(n.GetInt("ignore_index"));
    ignored = ctx->Emit("Equal", n.name + "_ignored",
                        {o.target, ctx->Scalar(n.name + "_ignore_index", index_type, ignore)});
    target = ctx->Emit("Where", n.name + "_target",
                       {ignored, ctx->Scalar(n.name + "_class0", index_type, 0), o.target});
  }
  std::vector<int64_t> column = o.target_shape;  // [N, 1, d1..dk]
  column.insert(column.begin() + 1, 1);
  const int at = ctx->Emit("Reshape", n.name + "_at", {target}, {{"__out_shape", column}});
  const int picked =
      ctx->Emit("GatherElements", n.name + "_picked", {log_prob, at}, {{"axis", int64_t{1}}});
  const int flat =
      ctx->Emit("Reshape", n.name + "_flat", {picked}, {{"__out_shape", o.target_shape}});
  int loss = ctx->Emit("Neg", n.name + "_neg", {flat});
  // Each element's weight: the class's, 0 where ignored; none when every element weighs 1.
  int weight = kAbsentValue;
  if (o.weight != kAbsentValue) {
    weight = ctx->Emit("Gather", n.name + "_weight", {o.weight, target}, {{"axis", int64_t{0}}});
  }
  if (ignored != kAbsentValue) {
    const int zero = ctx->Scalar(n.name + "_zero", o.dtype, 0);
    const int kept = weight != kAbsentValue ? weight : ctx->Scalar(n.name + "_one", o.dtype, 1);
    weight = ctx->Emit("Where", n.name + "_kept", {ignored, zero, kept});
  }
  if (weight != kAbsentValue) loss = ctx->Emit("Mul", n.name + "_weighted", {loss, weight});
  if (o.reduction == "none") {
    ctx->EmitInto(Node{"Identity", n.name + "_out", {}, {loss}, {out}});
    return;
  }
  std::vector<int64_t> all(o.target_shape.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const AttrMap whole{{"axes", all}, {"keepdims", int64_t{0}}};
  if (o.reduction == "sum") {
    ctx->EmitInto(Node{"ReduceSum", n.name + "_sum", whole, {loss}, {out}});
  } else if (weight == kAbsentValue) {
    ctx->EmitInto(Node{"ReduceMean", n.name + "_mean", whole, {loss}, {out}});
  } else {
    const int total = ctx->Emit("ReduceSum", n.name + "_total", {loss}, whole);
    const int weights = ctx->Emit("ReduceSum", n.name + "_weights", {weight}, whole);
    ctx->EmitInto(Node{"Div", n.name + "_mean", {}, {total, weights}, {out}});
  }
}

void NegativeLogLikelihoodLoss(Node n, CanonicalizeContext* ctx) {
  const LossOperands o = CheckOperands(n, "input", "target", ctx);
  EmitLoss(n, o, o.input, n.outputs.at(0), ctx);
}

// The loss of LogSoftmax(scores) along the classes; its second output, when wanted, is that
// LogSoftmax.
void SoftmaxCrossEntropyLoss(Node n, CanonicalizeContext* ctx) {
  const LossOperands o = CheckOperands(n, "scores", "labels", ctx);
  const int log_prob =
      ctx->Emit("LogSoftmax", n.name + "_log_prob", {o.input}, {{"axis", int64_t{1}}});
  EmitLoss(n, o, log_prob, n.outputs.at(0), ctx);
  if (n.outputs.size() > 1 && n.outputs[1] != kAbsentValue) {
    ctx->EmitInto(Node{"Identity", n.name + "_log_prob_out", {}, {log_prob}, {n.outputs[1]}});
  }
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("NegativeLogLikelihoodLoss", NegativeLogLikelihoodLoss);
EMBER_REGISTER_OP_CANONICALIZE("SoftmaxCrossEntropyLoss", SoftmaxCrossEntropyLoss);

}  // namespace compiler
}  // namespace ember
