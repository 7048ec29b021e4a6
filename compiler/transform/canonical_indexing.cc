// Canonical forms of the indexing, scan and selection ops: GatherElements, GatherND, OneHot,
// Trilu, EyeLike, CumSum, TopK, ScatterElements (and the older Scatter), ScatterND. Axes are
// normalized, the scalar inputs a static shape needs (TopK's k, CumSum's axis, OneHot's depth,
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

// The one value of a scalar (or one-element) constant input.
double ScalarInput(Node& n, size_t i, const char* what, CanonicalizeContext* ctx) {
  HostTensorPtr c = ctx->ConstInput(n, i, what);
  if (!c || c->NumElements() != 1) {
    NodeError(n, std::string("input ") + std::to_string(i) + " ('" + what +
                     "') must hold one value, got " + (c ? c->type.ToString() : "none"));
  }
  return c->GetAsDouble(0);
}

// Elements first, first + step, ... of constant indices must lie in [-extent, extent).
void CheckConstantIndices(const Node& n, size_t input, int64_t extent, const std::string& what,
                          CanonicalizeContext* ctx, int64_t first = 0, int64_t step = 1) {
  const Value& indices = ctx->graph().value(n.inputs.at(input));
  if (!indices.is_constant()) return;
  for (int64_t i = first; i < indices.constant->NumElements(); i += step) {
    const int64_t k = indices.constant->GetAsInt(i);
    if (k < -extent || k >= extent) {
      NodeError(n, "index " + std::to_string(k) + " (element " + std::to_string(i) +
                       " of indices '" + indices.name + "') is out of range for " + what +
                       " of size " + std::to_string(extent) +
                       "; valid: " + std::to_string(-extent) + ".." + std::to_string(extent - 1));
    }
  }
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
  CheckConstantIndices(n, 1, data.shape.at(axis), "axis " + std::to_string(axis), ctx);
  ctx->EmitInto(std::move(n));
}

void ScatterElementsOp(Node n, CanonicalizeContext* ctx) {
  n.op = "ScatterElements";  // Scatter (opsets 9-10) is its older name
  CheckReduction(n, {"none", "add", "mul", "max", "min"});
  const TensorType& data = ctx->TypeOf(n.inputs.at(0));
  const int64_t axis = NormalizeAxis(n, n.GetInt("axis", 0), data.ndim());
  n.attrs["axis"] = axis;
  CheckConstantIndices(n, 1, data.shape.at(axis), "axis " + std::to_string(axis), ctx);
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
    CheckConstantIndices(n, 1, data.shape[axis], "axis " + std::to_string(axis), ctx, j, k);
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
  const double depth = ScalarInput(n, 1, "depth", ctx);
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
  n.attrs["k"] = n.HasInput(1) ? static_cast<int64_t>(ScalarInput(n, 1, "k", ctx)) : int64_t{0};
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

void CumSumOp(Node n, CanonicalizeContext* ctx) {
  n.attrs["axis"] =
      NormalizeAxis(n, static_cast<int64_t>(ScalarInput(n, 1, "axis", ctx)), ctx->Rank(n, 0));
  ctx->DropInputsFrom(n, 1);
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
  const std::vector<int64_t> k = n.GetInts("kernel_shape", {});
  const std::vector<int64_t> s = n.GetInts("strides", std::vector<int64_t>(sp, 1));
  const std::vector<int64_t> p = n.GetInts("pads", std::vector<int64_t>(2 * sp, 0));
  if (static_cast<int64_t>(k.size()) != sp || static_cast<int64_t>(s.size()) != sp ||
      static_cast<int64_t>(p.size()) != 2 * sp) {
    NodeError(n, "kernel_shape and strides must hold " + std::to_string(sp) + " values, pads " +
                     std::to_string(2 * sp));
  }
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
  const double k = n.HasInput(1) ? ScalarInput(n, 1, "K", ctx) : n.GetInt("k", 0);
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
EMBER_REGISTER_OP_CANONICALIZE("OneHot", OneHotOp);
EMBER_REGISTER_OP_CANONICALIZE("Trilu", TriluOp);
EMBER_REGISTER_OP_CANONICALIZE("EyeLike", EyeLikeOp);
EMBER_REGISTER_OP_CANONICALIZE("CumSum", CumSumOp);
EMBER_REGISTER_OP_CANONICALIZE("TopK", TopKOp);
EMBER_REGISTER_OP_CANONICALIZE("GridSample", GridSampleOp);
EMBER_REGISTER_OP_CANONICALIZE("ReverseSequence", ReverseSequenceOp);
EMBER_REGISTER_OP_CANONICALIZE("MaxUnpool", MaxUnpoolOp);

}  // namespace compiler
}  // namespace ember
