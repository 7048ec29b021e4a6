// RotaryEmbedding (opset 23) written out as ONNX ops: each pair of channels (x1, x2) of a token's
// head is rotated by the angle its position picks from the caches, (x1 cos - x2 sin,
// x1 sin + x2 cos); channels past rotary_embedding_dim pass through.
#include <ember/compiler/ir/op_registry.h>

#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

// The layout the rotation works in: (batch, sequence, heads, head_size).
struct Tokens {
  int value;
  int64_t batch, sequence, heads, head_size;
};

Tokens ToTokens(OnnxExpander& e, const TensorType& x) {
  const Node& n = e.node();
  if (x.ndim() == 4) {  // (batch, heads, sequence, head_size)
    return {e.Op("Transpose", {n.inputs[0]}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}),
            x.shape[0], x.shape[2], x.shape[1], x.shape[3]};
  }
  if (x.ndim() != 3) NodeError(n, "input X must be 3-D or 4-D, got " + x.ToString());
  std::vector<int64_t> shape;
  const int split = e.SplitHeads(0, "X", "num_heads", &shape);
  return {split, shape[0], shape[1], shape[2], shape[3]};
}

// cos_cache or sin_cache (input i) as (batch, sequence, 1, half): rows picked by position_ids
// when given, the last axis cut to `half`.
int AnglesOf(OnnxExpander& e, size_t i, const Tokens& t, int64_t half) {
  const Node& n = e.node();
  const std::string name = i == 1 ? "cos_cache" : "sin_cache";
  const TensorType cache = e.TypeOf(n.inputs.at(i));
  const bool by_position = n.HasInput(3);
  if (by_position) {
    const TensorType ids = e.TypeOf(n.inputs[3]);
    if (ids.shape != std::vector<int64_t>{t.batch, t.sequence} || ids.dtype != kInt64) {
      NodeError(n, "position_ids must be int64[" + std::to_string(t.batch) + "," +
                       std::to_string(t.sequence) + "], got " + ids.ToString());
    }
  }
  const bool shaped =
      by_position ? cache.ndim() == 2
                  : cache.ndim() == 3 && cache.shape[0] == t.batch && cache.shape[1] == t.sequence;
  if (!shaped || cache.shape.back() < half) {
    NodeError(n, name + " must be " +
                     std::string(by_position ? "(max_position + 1, >= " : "(batch, sequence, >= ") +
                     std::to_string(half) + ")" + (by_position ? "" : " without position_ids") +
                     ", got " + cache.ToString());
  }
  int angles = n.inputs[i];
  if (cache.shape.back() != half) {
    angles = e.Op("Slice", {angles, e.Ints({0}), e.Ints({half}), e.Ints({-1})});
  }
  if (by_position) angles = e.Op("Gather", {angles, n.inputs[3]}, {{"axis", int64_t{0}}});
  return e.Op("Unsqueeze", {angles, e.Ints({2})});
}

int SliceLast(OnnxExpander& e, int x, int64_t begin, int64_t end, int64_t step = 1) {
  return e.Op("Slice", {x, e.Ints({begin}), e.Ints({end}), e.Ints({-1}), e.Ints({step})});
}

void RotaryEmbeddingOp(Node n, CanonicalizeContext* ctx) {
  OnnxExpander e(n, ctx);
  if (n.inputs.size() < 3) NodeError(n, "needs X, cos_cache and sin_cache");
  const TensorType x = e.TypeOf(n.inputs[0]);
  const Tokens t = ToTokens(e, x);
  const int64_t asked = n.GetInt("rotary_embedding_dim", 0);
  const int64_t dim = asked > 0 ? asked : t.head_size;
  if (dim > t.head_size || dim % 2 != 0) {
    NodeError(n, "rotary_embedding_dim must be even and at most the head size " +
                     std::to_string(t.head_size) + ", got " + std::to_string(dim));
  }
  for (size_t i = 1; i < 3; ++i) {
    if (e.TypeOf(n.inputs[i]).dtype != x.dtype) {
      NodeError(n, "cos_cache and sin_cache must be " + DTypeToString(x.dtype) + ", got " +
                       e.TypeOf(n.inputs[i]).ToString());
    }
  }
  const int64_t half = dim / 2;
  const int cos = AnglesOf(e, 1, t, half), sin = AnglesOf(e, 2, t, half);
  const bool interleaved = n.GetInt("interleaved", 0) != 0;
  // interleaved pairs channels (2i, 2i+1); otherwise (i, i + half).
  const int x1 = interleaved ? SliceLast(e, t.value, 0, dim, 2) : SliceLast(e, t.value, 0, half);
  const int x2 = interleaved ? SliceLast(e, t.value, 1, dim, 2) : SliceLast(e, t.value, half, dim);
  const int real = e.Op("Sub", {e.Op("Mul", {x1, cos}), e.Op("Mul", {x2, sin})});
  const int imag = e.Op("Add", {e.Op("Mul", {x1, sin}), e.Op("Mul", {x2, cos})});
  int rotated;
  if (interleaved) {
    const int pairs =
        e.Op("Concat",
             {e.Op("Unsqueeze", {real, e.Ints({-1})}), e.Op("Unsqueeze", {imag, e.Ints({-1})})},
             {{"axis", int64_t{-1}}});
    rotated = e.Op("Reshape", {pairs, e.Ints({t.batch, t.sequence, t.heads, dim})});
  } else {
    rotated = e.Op("Concat", {real, imag}, {{"axis", int64_t{-1}}});
  }
  if (dim < t.head_size) {
    rotated =
        e.Op("Concat", {rotated, SliceLast(e, t.value, dim, t.head_size)}, {{"axis", int64_t{-1}}});
  }
  if (x.ndim() == 4) {
    e.OpInto(n.outputs.at(0), "Transpose", {rotated}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  } else {
    e.OpInto(n.outputs.at(0), "Reshape", {rotated, e.Ints(x.shape)});
  }
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("RotaryEmbedding", RotaryEmbeddingOp);

}  // namespace compiler
}  // namespace ember
