// MarkCausalMasks: attention whose scores are masked past a diagonal (a causal mask, as Ember
// expands Attention's is_causal and as exporters write it) need not compute what the mask hides.
// The pattern: float32 scores [..., M, N] masked by a constant, read only by a Softmax over the
// last axis, whose output a MatMul (or Gemm) reads as its first operand. The masking is an Add of
// a constant mask, or a Where choosing by a constant condition between the scores and a constant
// (PyTorch's masked_fill), the constants the same for every leading index; a score is masked
// where it becomes kMaskedAtMost or less. Row m masked exactly from column m + c on, c >= 1 so
// that every row keeps a key: the three nodes get kCausalFromAttr = c
// (ember/compiler/ir/causal_mask.h says what each kernel may then skip).
#include <ember/compiler/ir/causal_mask.h>
#include <ember/compiler/transform.h>

#include <algorithm>
#include <optional>

namespace ember {
namespace compiler {
namespace {

// A constant read as a [rows][columns] matrix: one of [1, ..., 1, rows, columns] (an element per
// score), or a single element (the same for all).
struct ConstantMatrix {
  const HostTensor* data = nullptr;
  int64_t columns = 0;
  bool single = false;
  double At(int64_t m, int64_t j) const { return data->GetAsDouble(single ? 0 : m * columns + j); }
};

std::optional<ConstantMatrix> AsMatrix(const Graph& g, int id, int64_t rows, int64_t columns) {
  const Value& v = g.value(id);
  if (!v.is_constant()) return std::nullopt;
  const std::vector<int64_t>& s = v.type.shape;
  const bool ones = std::all_of(s.begin(), s.end() - std::min<size_t>(s.size(), 2),
                                [](int64_t d) { return d == 1; });
  if (v.type.NumElements() == 1) return ConstantMatrix{v.constant.get(), columns, true};
  if (s.size() >= 2 && ones && s[s.size() - 2] == rows && s.back() == columns) {
    return ConstantMatrix{v.constant.get(), columns, false};
  }
  return std::nullopt;
}

// Whether each score of the masking node `n` (output [..., rows, columns]) is masked, row by
// row; empty when `n` is no such masking.
std::vector<bool> MaskedScores(const Graph& g, const Node& n, int64_t rows, int64_t columns) {
  std::vector<bool> masked;
  auto each = [&](auto&& is_masked) {
    masked.resize(static_cast<size_t>(rows * columns));
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t j = 0; j < columns; ++j) masked[m * columns + j] = is_masked(m, j);
    }
  };
  const auto is_scores = [&](int id) {
    return !g.value(id).is_constant() && g.value(id).type == g.value(n.outputs[0]).type;
  };
  if (n.op == "Add" && n.inputs.size() == 2) {
    for (size_t i = 0; i < 2; ++i) {
      const auto mask = AsMatrix(g, n.inputs[i], rows, columns);
      if (mask && !mask->single && is_scores(n.inputs[1 - i])) {
        each([&](int64_t m, int64_t j) { return mask->At(m, j) <= kMaskedAtMost; });
        break;
      }
    }
  } else if (n.op == "Where" && n.inputs.size() == 3) {
    const auto cond = AsMatrix(g, n.inputs[0], rows, columns);
    for (size_t i = 1; cond && !cond->single && i < 3; ++i) {
      const auto fill = AsMatrix(g, n.inputs[i], rows, columns);
      if (fill && is_scores(n.inputs[3 - i])) {  // the fill where the condition is (i == 1) true
        each([&](int64_t m, int64_t j) {
          return (cond->At(m, j) != 0) == (i == 1) && fill->At(m, j) <= kMaskedAtMost;
        });
        break;
      }
    }
  }
  return masked;
}

// The c of scores [rows][columns] whose row m is masked exactly from column min(m + c, columns)
// on, or 0 (another mask, or one that masks nothing).
int64_t CausalOffset(const std::vector<bool>& masked, int64_t rows, int64_t columns) {
  int64_t offset = 0;
  for (int64_t m = 0; m < rows; ++m) {
    int64_t end = columns;  // one past the last key row m keeps
    while (end > 0 && masked[m * columns + end - 1]) --end;
    if (m == 0) offset = end;
    if (offset < 1 || end != std::min(m + offset, columns)) return 0;
  }
  return offset < columns ? offset : 0;
}

bool OverLastAxis(const Node& softmax, int64_t rank) {
  int64_t axis = softmax.GetInt("axis", -1);
  if (axis < 0) axis += rank;
  return axis == rank - 1;
}

}  // namespace

void MarkCausalMasks(Graph* graph) {
  const std::vector<int> uses = graph->UseCounts();
  const std::vector<std::vector<size_t>> readers = graph->Readers();
  std::vector<Node>& nodes = graph->nodes();
  for (Node& mask : nodes) {
    if ((mask.op != "Add" && mask.op != "Where") || mask.outputs.size() != 1) continue;
    const int scores = mask.outputs[0];
    const auto s = static_cast<size_t>(scores);
    const TensorType& t = graph->value(scores).type;
    // Read by the Softmax alone (UseCounts counts graph outputs too): -inf stored for the masked
    // scores is then seen only as the zero weight the mask gives them anyway.
    if (t.dtype != kFloat32 || t.ndim() < 2 || uses[s] != 1 || readers[s].size() != 1) continue;
    Node& softmax = nodes[readers[s][0]];
    if (softmax.op != "Softmax" || !OverLastAxis(softmax, t.ndim())) continue;
    const int64_t rows = t.shape[t.shape.size() - 2], columns = t.shape.back();
    const std::vector<bool> masked = MaskedScores(*graph, mask, rows, columns);
    const int64_t c = masked.empty() ? 0 : CausalOffset(masked, rows, columns);
    if (c == 0) continue;
    mask.attrs[kCausalFromAttr] = c;
    softmax.attrs[kCausalFromAttr] = c;
    const int probs = softmax.outputs.at(0);
    for (size_t r : readers[static_cast<size_t>(probs)]) {
      Node& product = nodes[r];
      const bool first_operand = product.inputs.at(0) == probs &&
                                 (product.inputs.size() < 2 || product.inputs[1] != probs);
      if (first_operand &&
          (product.op == "MatMul" || (product.op == "Gemm" && product.GetInt("transA", 0) == 0))) {
        product.attrs[kCausalFromAttr] = c;
      }
    }
  }
}

}  // namespace compiler
}  // namespace ember
