// Attention (opsets 23 and 24) written out as ONNX ops: scaled Q K^T, softcap, the additive mask
// (attn_mask, is_causal, nonpad_kv_seqlen), softmax and the product with V, for 3-D or 4-D inputs,
// grouped-query heads and a past key/value cache. The order is ONNX's current one: softcap before
// the mask, so masked scores stay -inf; the fourth output's modes follow it (0 Q K^T, 1 after
// softcap, 2 after the mask, 3 the softmax); a row the mask hides whole attends to nothing
// (zeros); is_causal over an external cache (nonpad_kv_seqlen) ends at each batch's last key.
#include <ember/compiler/ir/op_registry.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ir/shape_util.h"
#include "transform/onnx_expander.h"

namespace ember {
namespace compiler {
namespace {

// One of Q, K, V as (batch, heads, sequence, head_size); a 3-D input is split into `heads`.
struct Heads {
  int value;
  std::vector<int64_t> shape;
};

Heads HeadsOf(OnnxExpander& e, size_t i, const char* what, const char* heads_attr) {
  const Node& n = e.node();
  const TensorType t = e.TypeOf(n.inputs.at(i));
  if (t.ndim() == 4) return {n.inputs[i], t.shape};
  if (t.ndim() != 3) NodeError(n, std::string(what) + " must be 3-D or 4-D, got " + t.ToString());
  std::vector<int64_t> split;
  const int r = e.SplitHeads(i, what, heads_attr, &split);
  return {e.Op("Transpose", {r}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}),
          {split[0], split[2], split[1], split[3]}};
}

// past (input `past`, when given) followed by `now` along the sequence axis; written to output
// `present` when the node has it.
Heads WithPast(OnnxExpander& e, const Heads& now, size_t past, size_t present) {
  const Node& n = e.node();
  Heads all = now;
  if (n.HasInput(past)) {
    const TensorType p = e.TypeOf(n.inputs[past]);
    if (p.ndim() != 4 || p.shape[0] != now.shape[0] || p.shape[1] != now.shape[1] ||
        p.shape[3] != now.shape[3]) {
      NodeError(n, std::string(past == 4 ? "past_key" : "past_value") + " must be (" +
                       std::to_string(now.shape[0]) + ", " + std::to_string(now.shape[1]) +
                       ", past, " + std::to_string(now.shape[3]) + "), got " + p.ToString());
    }
    all.value = e.Op("Concat", {n.inputs[past], now.value}, {{"axis", int64_t{2}}});
    all.shape[2] += p.shape[2];
  }
  if (n.outputs.size() > present && n.outputs[present] != kAbsentValue) {
    e.OpInto(n.outputs[present], "Identity", {all.value});
  }
  return all;
}

// Each of kv's heads repeated `group` times in a row (query head j reads kv head j / group).
int RepeatHeads(OnnxExpander& e, const Heads& kv, int64_t group) {
  if (group == 1) return kv.value;
  const std::vector<int64_t>& s = kv.shape;
  const int wide = e.Op("Expand", {e.Op("Unsqueeze", {kv.value, e.Ints({2})}),
                                   e.Ints({s[0], s[1], group, s[2], s[3]})});
  return e.Op("Reshape", {wide, e.Ints({s[0], s[1] * group, s[2], s[3]})});
}

// 0 where query i may see key j (j <= i + past), -inf elsewhere: (q_seq, total).
HostTensorPtr CausalBias(int64_t q_seq, int64_t total, int64_t past, DLDataType dtype) {
  auto t = std::make_shared<HostTensor>(TensorType{{q_seq, total}, dtype});
  t->data.assign(static_cast<size_t>(t->type.ByteSize()), 0);
  for (int64_t i = 0; i < q_seq; ++i) {
    for (int64_t j = 0; j < total; ++j) {
      t->SetFromDouble(i * total + j,
                       j <= i + past ? 0.0 : -std::numeric_limits<double>::infinity());
    }
  }
  return t;
}

// attn_mask as an additive bias broadcast to (batch, heads, q_seq, total): a bool mask is 0 where
// true and -inf where false; opset 24 pads a shorter last axis with -inf (masked).
int MaskBias(OnnxExpander& e, const std::vector<int64_t>& scores, DLDataType dtype,
             bool pads_short_mask) {
  const Node& n = e.node();
  const TensorType m = e.TypeOf(n.inputs[3]);
  const int64_t total = scores[3];
  bool fits = m.ndim() >= 1 && m.ndim() <= 4 && (m.dtype == kBool || m.dtype == dtype);
  const int64_t last = fits ? m.shape.back() : 0;
  fits = fits && (last == total || last == 1 || (pads_short_mask && last < total));
  for (int64_t i = 0; fits && i + 1 < m.ndim(); ++i) {
    const int64_t want = scores[static_cast<size_t>(4 - m.ndim() + i)];
    fits = m.shape[static_cast<size_t>(i)] == 1 || m.shape[static_cast<size_t>(i)] == want;
  }
  if (!fits) {
    NodeError(n, "attn_mask must be bool or " + DTypeToString(dtype) + " and broadcast to " +
                     ShapeToString(scores) + ", got " + m.ToString());
  }
  int bias = n.inputs[3];
  if (m.dtype == kBool) {
    bias = e.Op("Where", {bias, e.Scalar(dtype, 0),
                          e.Scalar(dtype, -std::numeric_limits<double>::infinity())});
  }
  if (last < total && last != 1) {
    std::vector<int64_t> pads(static_cast<size_t>(2 * m.ndim()), 0);
    pads[static_cast<size_t>(2 * m.ndim() - 1)] = total - last;
    bias = e.Op("Pad",
                {bias, e.Ints(pads), e.Scalar(dtype, -std::numeric_limits<double>::infinity())});
  }
  return bias;
}

// An additive bias from nonpad_kv_seqlen (opset 24, one key count per batch): 0 where
// `needed` [1, 1, q_seq or 1, total] is at most batch b's count, -inf elsewhere.
int WithinKeyCount(OnnxExpander& e, const std::vector<int64_t>& needed, int64_t rows, int64_t batch,
                   DLDataType dtype) {
  const Node& n = e.node();
  const TensorType lens = e.TypeOf(n.inputs[6]);
  if (lens.dtype != kInt64 || lens.shape != std::vector<int64_t>{batch}) {
    NodeError(n, "nonpad_kv_seqlen must be int64[" + std::to_string(batch) +
                     "] (one count per batch), got " + lens.ToString());
  }
  const int64_t total = static_cast<int64_t>(needed.size()) / rows;
  const int grid = e.Op("Reshape", {e.Ints(needed), e.Ints({1, 1, rows, total})});
  const int count = e.Op("Reshape", {n.inputs[6], e.Ints({batch, 1, 1, 1})});
  return e.Op("Where", {e.Op("LessOrEqual", {grid, count}), e.Scalar(dtype, 0),
                        e.Scalar(dtype, -std::numeric_limits<double>::infinity())});
}

// Keys past batch b's count are padding: key j needs j + 1 keys.
int NonPadBias(OnnxExpander& e, int64_t batch, int64_t total, DLDataType dtype) {
  std::vector<int64_t> needed(static_cast<size_t>(total));
  for (int64_t j = 0; j < total; ++j) needed[static_cast<size_t>(j)] = j + 1;
  return WithinKeyCount(e, needed, 1, batch, dtype);
}

// is_causal over an external cache (nonpad_kv_seqlen without past_key; ONNX's errata to opset 24):
// the queries are the last q_seq of batch b's keys, so query i sees key j when
// j <= i + nonpad[b] - q_seq: j - i + q_seq keys needed.
int CacheCausalBias(OnnxExpander& e, int64_t batch, int64_t q_seq, int64_t total,
                    DLDataType dtype) {
  std::vector<int64_t> needed(static_cast<size_t>(q_seq * total));
  for (int64_t i = 0; i < q_seq; ++i) {
    for (int64_t j = 0; j < total; ++j) needed[static_cast<size_t>(i * total + j)] = j - i + q_seq;
  }
  return WithinKeyCount(e, needed, q_seq, batch, dtype);
}

void AttentionOp(Node n, CanonicalizeContext* ctx) {
  OnnxExpander e(n, ctx);
  if (n.inputs.size() < 3) NodeError(n, "needs Q, K and V");
  const DLDataType dtype = e.TypeOf(n.inputs[0]).dtype;
  const bool three_d = e.TypeOf(n.inputs[0]).ndim() == 3;
  const Heads q = HeadsOf(e, 0, "Q", "q_num_heads");
  const Heads k = WithPast(e, HeadsOf(e, 1, "K", "kv_num_heads"), 4, 1);
  const Heads v = WithPast(e, HeadsOf(e, 2, "V", "kv_num_heads"), 5, 2);
  const int64_t batch = q.shape[0], q_heads = q.shape[1], q_seq = q.shape[2];
  const int64_t kv_heads = k.shape[1], total = k.shape[2];
  const bool agree = k.shape[0] == batch && v.shape[0] == batch && v.shape[1] == kv_heads &&
                     v.shape[2] == total && k.shape[3] == q.shape[3] && kv_heads > 0 &&
                     q_heads % kv_heads == 0;
  if (!agree) {
    NodeError(n, "Q " + ShapeToString(q.shape) + ", K " + ShapeToString(k.shape) + " and V " +
                     ShapeToString(v.shape) +
                     " (batch, heads, sequence, head) do not agree: "
                     "the batch, K's and V's heads and sequence, Q's and K's head size must "
                     "match, and K's heads divide Q's");
  }
  for (size_t i = 1; i < 3; ++i) {
    if (e.TypeOf(n.inputs[i]).dtype != dtype) {
      NodeError(n, "K and V must be " + DTypeToString(dtype) + " as Q is, got " +
                       e.TypeOf(n.inputs[i]).ToString());
    }
  }
  const int64_t group = q_heads / kv_heads;
  const double scale = n.HasAttr("scale") ? n.GetFloat("scale") : 1.0 / std::sqrt(q.shape[3]);
  const int root = e.Scalar(dtype, std::sqrt(scale));
  const int keys_t = e.Op("Transpose", {e.Op("Mul", {RepeatHeads(e, k, group), root})},
                          {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
  int scores = e.Op("MatMul", {e.Op("Mul", {q.value, root}), keys_t});
  std::vector<int> stages = {scores};  // the fourth output's modes, in order
  const double softcap = n.GetFloat("softcap", 0.0);
  if (softcap > 0) {
    scores = e.Op("Mul", {e.Op("Tanh", {e.Op("Div", {scores, e.Scalar(dtype, softcap)})}),
                          e.Scalar(dtype, softcap)});
  }
  stages.push_back(scores);
  const std::vector<int64_t> shape = {batch, q_heads, q_seq, total};
  if (n.HasInput(3)) scores = e.Op("Add", {scores, MaskBias(e, shape, dtype, ctx->opset() >= 24)});
  if (n.HasInput(6)) scores = e.Op("Add", {scores, NonPadBias(e, batch, total, dtype)});
  if (n.GetInt("is_causal", 0) != 0) {
    const bool external_cache = n.HasInput(6) && !n.HasInput(4);
    const int64_t past = n.HasInput(4) ? e.TypeOf(n.inputs[4]).shape[2] : 0;
    scores =
        e.Op("Add", {scores, external_cache
                                 ? CacheCausalBias(e, batch, q_seq, total, dtype)
                                 : e.Constant("_causal", CausalBias(q_seq, total, past, dtype))});
  }
  stages.push_back(scores);
  const int64_t precision = n.GetInt("softmax_precision", 0);
  const bool widen = precision != 0 && precision != DTypeToOnnx(dtype);
  if (widen && precision != DTypeToOnnx(kFloat32)) {
    NodeUnsupported(n, "softmax_precision " + std::to_string(precision) + " (supported: float)");
  }
  int probs = e.Op("Softmax", {widen ? e.Cast(scores, kFloat32) : scores}, {{"axis", int64_t{-1}}});
  if (widen) probs = e.Cast(probs, dtype);
  stages.push_back(probs);
  const int64_t mode = n.GetInt("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) {
    NodeError(n, "qk_matmul_output_mode must be 0..3, got " + std::to_string(mode));
  }
  if (n.outputs.size() > 3 && n.outputs[3] != kAbsentValue) {
    e.OpInto(n.outputs[3], "Identity", {stages[static_cast<size_t>(mode)]});
  }
  if (n.HasInput(3) || n.HasInput(6)) {
    // A row the masks hide whole has no softmax (0 / 0): ONNX (and ONNX Runtime) give it zeros.
    probs = e.Op("Where", {e.Op("IsNaN", {probs}), e.Scalar(dtype, 0), probs});
  }
  const int y = e.Op("MatMul", {probs, RepeatHeads(e, v, group)});
  if (!three_d) {
    e.OpInto(n.outputs.at(0), "Identity", {y});
    return;
  }
  const int tokens = e.Op("Transpose", {y}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  e.OpInto(n.outputs.at(0), "Reshape", {tokens, e.Ints({batch, q_seq, q_heads * v.shape[3]})});
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("Attention", AttentionOp);

}  // namespace compiler
}  // namespace ember
