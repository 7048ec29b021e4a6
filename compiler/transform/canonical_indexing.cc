// Canonical forms of the indexing, scan and selection ops: GatherElements, GatherND, OneHot,
// Trilu, EyeLike, CumSum, CumProd, TopK, ScatterElements (and the older Scatter), ScatterND,
// TensorScatter. Axes
// are normalized, the scalar inputs a static shape needs (TopK's k, CumSum's axis, OneHot's depth,
// Trilu's k) become attributes, enumerated strings are checked, and indices known at compile
// time are checked against the axes they index, so the kernels never meet a bad one.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// OneHot's depth at most: one index makes `depth` outputs, so a larger one is a malformed model
// asking for gigabytes, refused before anything is allocated.
constexpr double kMaxOneHotDepth = 1 << 24;

// A scalar input's value as the model holds it: 3, not 3.000000.
std::string Written(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

void CheckReduction(const Node& n, const std::vector<std::string>& valid) {
  const std::string r = n.GetString("reduction", "none");
  if (std::find(valid.begin(), valid.end(), r) != valid.end()) return;
  std::string list;
  for (const std::string& v : valid) list += (list.empty() ? "" : ", ") + v;
  NodeUnsupported(n, "reduction '" + r + "' (supported: " + list + ")");
}

void GatherElementsOp(Node n, CanonicalizeContext* ctx) {
  const TensorType& data = ctx->TypeOf(n.inputs.at(0));
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", 0), data.ndim());
  n.attrs["axis"] = axis;
  ctx->CheckConstantIndices(n, 1, data.shape.at(axis), "axis " + std::to_string(axis));
  ctx->EmitInto(std::move(n));
}

void ScatterElementsOp(Node n, CanonicalizeContext* ctx) {
  n.op = "ScatterElements";  // Scatter (opsets 9-10) is its older name
  CheckReduction(n, {"none", "add", "mul", "max", "min"});
  const TensorType& data = ctx->TypeOf(n.inputs.at(0));
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", 0), data.ndim());
  n.attrs["axis"] = axis;
  ctx->CheckConstantIndices(n, 1, data.shape.at(axis), "axis " + std::to_string(axis));
  ctx->EmitInto(std::move(n));
}

// Index tuples of GatherND and ScatterND: component j indexes axis batch_dims + j.
void CheckConstantTuples(const Node& n, int64_t batch_dims, CanonicalizeContext* ctx) {
  const TensorType& data = ctx->TypeOf(n.inputs.at(0));
  const TensorType& indices = ctx->TypeOf(n.inputs.at(1));
  if (indices.ndim() == 0) return;  // the shape rule refuses it
  const int64_t k = indices.shape.back();
  for (int64_t j = 0; j < k && batch_dims + j < data.ndim(); ++j) {
    const int64_t axis = batch_dims + j;
    ctx->CheckConstantIndices(n, 1, data.shape[axis], "axis " + std::to_string(axis), j, k);
  }
}

void GatherNDOp(Node n, CanonicalizeContext* ctx) {
  CheckConstantTuples(n, n.GetInt("batch_dims", 0), ctx);
  ctx->EmitInto(std::move(n));
}

void ScatterNDOp(Node n, CanonicalizeContext* ctx) {
  CheckReduction(n, {"none", "add", "mul", "max", "min"});
  CheckConstantTuples(n, 0, ctx);
  ctx->EmitInto(std::move(n));
}

// OneHot(indices, depth, values): depth becomes an attribute; the values [off, on] stay input 2.
void OneHotOp(Node n, CanonicalizeContext* ctx) {
  const double depth = ctx->OneValueInput(n, 1, "depth")->GetAsDouble(0);
  if (!(depth >= 1 && depth <= kMaxOneHotDepth)) {
    NodeError(n, "depth must be 1.." + std::to_string(static_cast<int64_t>(kMaxOneHotDepth)) +
                     ", got " + Written(depth));
  }
  if (ctx->TypeOf(n.inputs.at(2)).NumElements() != 2) {
    NodeError(
        n, "values must hold two elements (off, on), got " + ctx->TypeOf(n.inputs[2]).ToString());
  }
  n.attrs["depth"] = static_cast<int64_t>(depth);
  n.attrs["axis"] = NormalizeAxis(n, n.GetInt("axis", -1), ctx->Rank(n, 0) + 1);
  n.inputs.erase(n.inputs.begin() + 1);
  ctx->EmitInto(std::move(n));
}

void TriluOp(Node n, CanonicalizeContext* ctx) {
  if (ctx->Rank(n, 0) < 2) {
    NodeError(n, "expected rank >= 2, got " + ctx->TypeOf(n.inputs[0]).ToString());
  }
  n.attrs["k"] = n.HasInput(1) ? ctx->OneValueInput(n, 1, "k")->GetAsInt(0) : int64_t{0};
  ctx->DropInputsFrom(n, 1);
  ctx->EmitInto(std::move(n));
}

void EyeLikeOp(Node n, CanonicalizeContext* ctx) {
  const DLDataType dtype = n.HasAttr("dtype") ? OnnxToDType(static_cast<int32_t>(n.GetInt("dtype")),
                                                            n.Describe() + ": attribute 'dtype'")
                                              : ctx->TypeOf(n.inputs.at(0)).dtype;
  n.attrs["__dtype"] = DTypeToString(dtype);
  ctx->EmitInto(std::move(n));
}

// CumSum and CumProd: the axis input becomes an attribute.
void CumulativeOp(Node n, CanonicalizeContext* ctx) {
  n.attrs["axis"] =
      NormalizeAxis(n, ctx->OneValueInput(n, 1, "axis")->GetAsInt(0), ctx->Rank(n, 0));
  ctx->DropInputsFrom(n, 1);
  ctx->EmitInto(std::move(n));
}

// TensorScatter (opset 24), a KV cache's update: the axis normalized (never 0, the batch axis),
// the update checked against the cache (the same shape but along the axis, at most as long), an
// absent write_indices dropped (every batch writes from position 0).
void TensorScatterOp(Node n, CanonicalizeContext* ctx) {
  const TensorType cache = ctx->TypeOf(n.inputs.at(0)), update = ctx->TypeOf(n.inputs.at(1));
  const std::string mode = n.GetString("mode", "linear");
  if (mode != "linear" && mode != "circular") {
    NodeError(n, "mode '" + mode + "' (valid: linear, circular)");
  }
  if (cache.ndim() < 2) {
    NodeError(n, "past_cache must have a batch and a sequence axis, got " + cache.ToString());
  }
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", -2), cache.ndim());
  if (axis == 0) NodeError(n, "axis must not be 0, the batch axis");
  bool fits = update.dtype == cache.dtype && update.ndim() == cache.ndim();
  for (int64_t d = 0; fits && d < cache.ndim(); ++d) {
    fits = d == axis ? update.shape[d] <= cache.shape[d] : update.shape[d] == cache.shape[d];
  }
  if (!fits) {
    NodeError(n, "update must have past_cache's shape " + cache.ToString() + " but along axis " +
                     std::to_string(axis) + " (at most " + std::to_string(cache.shape[axis]) +
                     "), got " + update.ToString());
  }
  if (!n.HasInput(2)) {
    ctx->DropInputsFrom(n, 2);
  } else if (const TensorType w = ctx->TypeOf(n.inputs[2]);
             w.dtype != kInt64 || w.shape != std::vector<int64_t>{cache.shape[0]}) {
    NodeError(n, "write_indices must be int64[" + std::to_string(cache.shape[0]) +
                     "] (one per batch), got " + w.ToString());
  }
  n.attrs["axis"] = axis;
  n.attrs["mode"] = mode;
  ctx->EmitInto(std::move(n));
}

// ReverseSequence: time and batch axes 0 and 1 (either way round); constant lengths checked.
void ReverseSequenceOp(Node n, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs.at(0));
  const int64_t time = n.GetInt("time_axis", 0), batch = n.GetInt("batch_axis", 1);
  if (x.ndim() < 2 || time == batch || time < 0 || time > 1 || batch < 0 || batch > 1) {
    NodeError(n, "expected time_axis and batch_axis 0 and 1 of an input of rank >= 2, got " +
                     std::to_string(time) + " and " + std::to_string(batch) + " for " +
                     x.ToString());
  }
  const TensorType& lens = ctx->TypeOf(n.inputs.at(1));
  if (lens.shape != std::vector<int64_t>{x.shape[batch]}) {
    NodeError(n, "sequence_lens must be [" + std::to_string(x.shape[batch]) +
                     "] (the batch), got " + lens.ToString());
  }
  const Value& given = ctx->graph().value(n.inputs[1]);
  for (int64_t b = 0; given.is_constant() && b < x.shape[batch]; ++b) {
    const int64_t len = given.constant->GetAsInt(b);
    if (len < 0 || len > x.shape[time]) {
      NodeError(n, "sequence length " + std::to_string(len) + " (batch " + std::to_string(b) +
                       ") is outside 0.." + std::to_string(x.shape[time]));
    }
  }
  n.attrs["time_axis"] = time;
  n.attrs["batch_axis"] = batch;
  ctx->EmitInto(std::move(n));
}

// GridSample: opset 20's names of the modes ("linear", "cubic") as opset 16's, each checked.
void GridSampleOp(Node n, CanonicalizeContext* ctx) {
  std::string mode = n.GetString("mode", "bilinear");
  if (mode == "linear") mode = "bilinear";
  if (mode == "cubic") mode = "bicubic";
  const std::string padding = n.GetString("padding_mode", "zeros");
  if (mode != "bilinear" && mode != "nearest" && mode != "bicubic") {
    NodeUnsupported(n, "mode '" + mode + "' (supported: bilinear/linear, nearest, bicubic/cubic)");
  }
  if (padding != "zeros" && padding != "border" && padding != "reflection") {
    NodeUnsupported(n, "padding_mode '" + padding + "' (supported: zeros, border, reflection)");
  }
  n.attrs["mode"] = mode;
  ctx->EmitInto(std::move(n));
}

// TopK: k an attribute in every opset (opset 1 had it so already), 1..the axis's size.
void TopKOp(Node n, CanonicalizeContext* ctx) {
  const TensorType& x = ctx->TypeOf(n.inputs.at(0));
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", -1), x.ndim());
  const double k = n.HasInput(1) ? ctx->OneValueInput(n, 1, "K")->GetAsDouble(0) : n.GetInt("k", 0);
  if (!(k >= 1 && k <= static_cast<double>(x.shape[axis]))) {
    NodeError(n, "k must be 1.." + std::to_string(x.shape[axis]) + " (the size of axis " +
                     std::to_string(axis) + " of " + x.ToString() + "), got " + Written(k));
  }
  n.attrs["axis"] = axis;
  n.attrs["k"] = static_cast<int64_t>(k);
  ctx->DropInputsFrom(n, 1);
  ctx->EmitInto(std::move(n));
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("GatherElements", GatherElementsOp);
EMBER_REGISTER_OP_CANONICALIZE("GatherND", GatherNDOp);
EMBER_REGISTER_OP_CANONICALIZE("ScatterElements", ScatterElementsOp);
EMBER_REGISTER_OP_CANONICALIZE("Scatter", ScatterElementsOp);
EMBER_REGISTER_OP_CANONICALIZE("ScatterND", ScatterNDOp);
EMBER_REGISTER_OP_CANONICALIZE("TensorScatter", TensorScatterOp);
EMBER_REGISTER_OP_CANONICALIZE("OneHot", OneHotOp);
EMBER_REGISTER_OP_CANONICALIZE("Trilu", TriluOp);
EMBER_REGISTER_OP_CANONICALIZE("EyeLike", EyeLikeOp);
EMBER_REGISTER_OP_CANONICALIZE("CumSum", CumulativeOp);
EMBER_REGISTER_OP_CANONICALIZE("CumProd", CumulativeOp);
EMBER_REGISTER_OP_CANONICALIZE("TopK", TopKOp);
EMBER_REGISTER_OP_CANONICALIZE("GridSample", GridSampleOp);
EMBER_REGISTER_OP_CANONICALIZE("ReverseSequence", ReverseSequenceOp);

}  // namespace compiler
}  // namespace ember
