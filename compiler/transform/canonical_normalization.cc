// Canonical forms of LayerNormalization, BatchNormalization, GroupNormalization,
// MeanVarianceNormalization and RMSNormalization (registered as their canonicalization rules):
// the forms with statistics outputs, training mode or groups, MVN and RMS, as primitive ops.
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cmath>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// x's mean over `axes`, x minus it, and the mean of that squared (the biased variance), each
// kept at x's rank.
struct Moments {
  int mean, centered, variance;
};

Moments MomentsOver(const Node& n, int x, const std::vector<int64_t>& axes,
                    CanonicalizeContext* ctx) {
  AttrMap red{{"axes", axes}, {"keepdims", int64_t{1}}};
  Moments m;
  m.mean = ctx->Emit("ReduceMean", n.name + "_mean", {x}, red);
  m.centered = ctx->Emit("Sub", n.name + "_centered", {x, m.mean});
  m.variance = ctx->Emit("ReduceMean", n.name + "_var",
                         {ctx->Emit("Mul", n.name + "_square", {m.centered, m.centered})}, red);
  return m;
}

// LayerNormalization whose Mean / InvStdDev outputs are wanted: written out as primitive ops.
void LayerNormWithStats(Node n, CanonicalizeContext* ctx) {
  int64_t r = ctx->Rank(n, 0);
  int64_t axis = n.GetInt("axis");
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < r; ++i) axes.push_back(i);
  const DLDataType dt = ctx->TypeOf(n.inputs[0]).dtype;
  const Moments m = MomentsOver(n, n.inputs[0], axes, ctx);
  const int mean = m.mean, d = m.centered;
  int ve = ctx->Emit("Add", n.name + "_var_eps",
                     {m.variance, ctx->Scalar(n.name + "_c", dt, n.GetFloat("epsilon", 1e-5))});
  int sd = ctx->Emit("Sqrt", n.name + "_std", {ve});
  int inv = ctx->Emit("Reciprocal", n.name + "_inv_std", {sd});
  int norm = ctx->Emit("Mul", n.name + "_norm", {d, inv});
  if (n.HasInput(2)) {
    int scaled = ctx->Emit("Mul", n.name + "_scaled", {norm, n.inputs[1]});
    ctx->EmitInto(Node{"Add", n.name, {}, {scaled, n.inputs[2]}, {n.outputs[0]}});
  } else {
    ctx->EmitInto(Node{"Mul", n.name, {}, {norm, n.inputs[1]}, {n.outputs[0]}});
  }
  ctx->EmitInto(Node{"Identity", n.name + "_mean_out", {}, {mean}, {n.outputs[1]}});
  if (n.outputs.size() > 2) {
    ctx->EmitInto(Node{"Identity", n.name + "_inv_std_out", {}, {inv}, {n.outputs[2]}});
  }
}

// Training-mode BatchNormalization: batch statistics, written out as primitive ops.
void BatchNormTraining(Node n, CanonicalizeContext* ctx) {
  const TensorType& xt = ctx->TypeOf(n.inputs[0]);
  int64_t r = xt.ndim();
  if (r < 2) NodeError(n, "input must have rank >= 2");
  int64_t c = xt.shape[1];
  std::vector<int64_t> axes{0}, cshape{c};
  for (int64_t i = 2; i < r; ++i) {
    axes.push_back(i);
    cshape.push_back(1);
  }
  auto scalar = [&](double v) { return ctx->Scalar(n.name + "_c", xt.dtype, v); };
  auto reshape = [&](int v, std::vector<int64_t> shape, const std::string& tag) {
    return ctx->Emit("Reshape", n.name + tag, {v}, {{"__out_shape", shape}});
  };
  const Moments m = MomentsOver(n, n.inputs[0], axes, ctx);
  const int mean = m.mean, d = m.centered, var = m.variance;
  int sd = ctx->Emit(
      "Sqrt", n.name + "_std",
      {ctx->Emit("Add", n.name + "_var_eps", {var, scalar(n.GetFloat("epsilon", 1e-5))})});
  int norm = ctx->Emit("Div", n.name + "_norm", {d, sd});
  int scaled = ctx->Emit("Mul", n.name + "_scaled", {norm, reshape(n.inputs[1], cshape, "_gamma")});
  ctx->EmitInto(
      Node{"Add", n.name, {}, {scaled, reshape(n.inputs[2], cshape, "_beta")}, {n.outputs[0]}});
  double momentum = n.GetFloat("momentum", 0.9);
  for (size_t k = 1; k < n.outputs.size() && k < 3; ++k) {
    int batch = reshape(k == 1 ? mean : var, {c}, k == 1 ? "_mean_c" : "_var_c");
    int old =
        ctx->Emit("Mul", n.name + "_old" + std::to_string(k), {n.inputs[2 + k], scalar(momentum)});
    int cur = ctx->Emit("Mul", n.name + "_new" + std::to_string(k), {batch, scalar(1 - momentum)});
    ctx->EmitInto(
        Node{"Add", n.name + "_running" + std::to_string(k), {}, {old, cur}, {n.outputs[k]}});
  }
}

// GroupNormalization: a group's statistics are InstanceNormalization's over (N, G, C/G * spatial).
// Opset 18 scales each group (scale, bias of shape G); opset 21 each channel (shape C), applied
// after the reshape back.
void GroupNormOp(Node n, CanonicalizeContext* ctx) {
  const TensorType x = ctx->TypeOf(n.inputs[0]);
  if (x.ndim() < 2) NodeError(n, "expected input of rank >= 2 (N, C, ...), got " + x.ToString());
  if (!n.HasAttr("num_groups")) NodeError(n, "missing attribute 'num_groups'");
  const int64_t groups = n.GetInt("num_groups");
  const int64_t c = x.shape[1];
  if (groups < 1 || c % groups != 0) {
    NodeError(n, "num_groups must divide the " + std::to_string(c) + " channels, got " +
                     std::to_string(groups));
  }
  const int64_t per_channel = c == 0 ? 0 : x.NumElements() / (x.shape[0] * c);
  const int64_t want = ctx->opset() >= 21 ? c : groups;
  for (size_t i = 1; i < 3; ++i) {
    if (ctx->TypeOf(n.inputs.at(i)).shape != std::vector<int64_t>{want}) {
      NodeError(n, std::string(i == 1 ? "scale" : "bias") + " must have shape [" +
                       std::to_string(want) + "] at opset " + std::to_string(ctx->opset()) +
                       ", got " + ctx->TypeOf(n.inputs[i]).ToString());
    }
  }
  AttrMap eps{{"epsilon", n.GetFloat("epsilon", 1e-5)}};
  int grouped = ctx->Emit(
      "Reshape", n.name + "_groups", {n.inputs[0]},
      {{"__out_shape", std::vector<int64_t>{x.shape[0], groups, c / groups * per_channel}}});
  if (ctx->opset() < 21) {
    int norm = ctx->Emit("InstanceNormalization", n.name + "_norm",
                         {grouped, n.inputs[1], n.inputs[2]}, eps);
    ctx->EmitInto(Node{"Reshape", n.name, {{"__out_shape", x.shape}}, {norm}, n.outputs});
    return;
  }
  auto filled = [&](double v, const char* tag) {
    auto t = std::make_shared<HostTensor>(TensorType{{groups}, x.dtype});
    for (int64_t i = 0; i < groups; ++i) t->SetFromDouble(i, v);
    return ctx->graph().AddConstant(ctx->graph().UniqueName(n.name + tag), t);
  };
  int norm = ctx->Emit("InstanceNormalization", n.name + "_norm",
                       {grouped, filled(1.0, "_ones"), filled(0.0, "_zeros")}, eps);
  int back = ctx->Emit("Reshape", n.name + "_ungroup", {norm}, {{"__out_shape", x.shape}});
  std::vector<int64_t> per_c(x.shape.size() - 1, 1);
  per_c[0] = c;
  int scale = ctx->Emit("Reshape", n.name + "_scale", {n.inputs[1]}, {{"__out_shape", per_c}});
  int bias = ctx->Emit("Reshape", n.name + "_bias", {n.inputs[2]}, {{"__out_shape", per_c}});
  int scaled = ctx->Emit("Mul", n.name + "_scaled", {back, scale});
  ctx->EmitInto(Node{"Add", n.name, {}, {scaled, bias}, n.outputs});
}

// MeanVarianceNormalization: (x - mean) / (std + 1e-9) over `axes` (default N, H, W), the
// epsilon of ONNX's own definition of the op.
void MvnOp(Node n, CanonicalizeContext* ctx) {
  const int64_t r = ctx->Rank(n, 0);
  std::vector<int64_t> axes = n.GetInts("axes", {0, 2, 3});
  for (int64_t& a : axes) a = NormalizeAxis(n, a, r, "axes entry");
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end()) {
    NodeError(n, "axes must not repeat an axis, got " + ShapeToString(n.GetInts("axes")));
  }
  const Moments m = MomentsOver(n, n.inputs.at(0), axes, ctx);
  int sd = ctx->Emit("Sqrt", n.name + "_std", {m.variance});
  int sde = ctx->Emit("Add", n.name + "_std_eps",
                      {sd, ctx->Scalar(n.name + "_c", ctx->TypeOf(n.inputs[0]).dtype, 1e-9)});
  ctx->EmitInto(Node{"Div", n.name, {}, {m.centered, sde}, n.outputs});
}

// RMSNormalization (opset 23): x / sqrt(mean(x^2 over axis..last) + epsilon) * scale, the
// statistics in stash_type (float32 by default, so a float16 x is widened for them).
void RmsNormOp(Node n, CanonicalizeContext* ctx) {
  const TensorType x = ctx->TypeOf(n.inputs.at(0));
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", -1), x.ndim());
  const TensorType scale = ctx->TypeOf(n.inputs.at(1));
  const std::vector<int64_t> normalized(x.shape.begin() + axis, x.shape.end());
  const size_t lead = normalized.size() - std::min(normalized.size(), scale.shape.size());
  bool broadcasts = scale.ndim() <= static_cast<int64_t>(normalized.size());
  for (size_t i = 0; broadcasts && i < scale.shape.size(); ++i) {
    broadcasts = scale.shape[i] == 1 || scale.shape[i] == normalized[lead + i];
  }
  if (!broadcasts || scale.dtype != x.dtype) {
    NodeError(n, "scale must be " + DTypeToString(x.dtype) + " and broadcast to the normalized " +
                     "shape " + ShapeToString(normalized) + ", got " + scale.ToString());
  }
  const int64_t stash = n.GetInt("stash_type", 1);
  if (stash != 1 && stash != DTypeToOnnx(x.dtype)) {
    NodeUnsupported(n, "stash_type " + std::to_string(stash) + " (supported: 1, float32, or " +
                           "the input's own type)");
  }
  const bool widen = stash == 1 && x.dtype != kFloat32;
  const int xs = widen ? ctx->Cast(n.name + "_stash", n.inputs[0], kFloat32) : n.inputs[0];
  const DLDataType dt = widen ? kFloat32 : x.dtype;
  std::vector<int64_t> axes;
  for (int64_t i = axis; i < x.ndim(); ++i) axes.push_back(i);
  const int mean_square = ctx->Emit("ReduceMean", n.name + "_mean_square",
                                    {ctx->Emit("Mul", n.name + "_square", {xs, xs})},
                                    {{"axes", axes}, {"keepdims", int64_t{1}}});
  const int rms = ctx->Emit(
      "Sqrt", n.name + "_rms",
      {ctx->Emit("Add", n.name + "_plus_eps",
                 {mean_square, ctx->Scalar(n.name + "_eps", dt, n.GetFloat("epsilon", 1e-5))})});
  int normed = ctx->Emit("Div", n.name + "_normed", {xs, rms});
  if (widen) normed = ctx->Cast(n.name + "_unstash", normed, x.dtype);
  ctx->EmitInto(Node{"Mul", n.name, {}, {normed, n.inputs[1]}, {n.outputs.at(0)}});
}

void CanonicalizeLayerNorm(Node n, CanonicalizeContext* ctx) {
  n.attrs["axis"] = NormalizeAxis(n, n.GetInt("axis", -1), ctx->Rank(n, 0));
  if (n.outputs.size() > 1) {
    LayerNormWithStats(std::move(n), ctx);
    return;
  }
  ctx->EmitInto(std::move(n));
}

void CanonicalizeBatchNorm(Node n, CanonicalizeContext* ctx) {
  // Both modes read scale, B, mean and var per channel: the op's type rule checks their shapes
  // before the training expansion spreads them over nodes an error would name instead.
  std::vector<TensorType> types;
  for (int id : n.inputs) types.push_back(id == kAbsentValue ? TensorType{} : ctx->TypeOf(id));
  InferNodeTypes(n, types);
  if (n.GetInt("training_mode", 0)) {
    BatchNormTraining(std::move(n), ctx);
    return;
  }
  if (n.outputs.size() > 1) {
    NodeUnsupported(n, "running mean/var outputs need training_mode=1 (opset 14+)");
  }
  n.attrs.erase("spatial");
  n.attrs.erase("momentum");
  ctx->EmitInto(std::move(n));
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("LayerNormalization", CanonicalizeLayerNorm);
EMBER_REGISTER_OP_CANONICALIZE("BatchNormalization", CanonicalizeBatchNorm);
EMBER_REGISTER_OP_CANONICALIZE("GroupNormalization", GroupNormOp);
EMBER_REGISTER_OP_CANONICALIZE("MeanVarianceNormalization", MvnOp);
EMBER_REGISTER_OP_CANONICALIZE("RMSNormalization", RmsNormOp);

}  // namespace compiler
}  // namespace ember
