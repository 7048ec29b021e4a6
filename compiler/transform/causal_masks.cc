// MarkCausalMasks: attention whose scores get a constant mask hiding each row's keys past a
// diagonal (a causal mask, as Ember expands Attention's is_causal and as exporters write it) need
// not compute what the mask hides. The pattern: an Add of float32 scores [..., M, N] and a
// constant mask [1, ..., 1, M, N] read only by a Softmax over the last axis, whose output a
// MatMul (or Gemm) reads as its first operand; row m of the mask masked (kMaskedAtMost) exactly
// from column m + c on, c >= 1 so that every row keeps a key. The three nodes get
// kCausalFromAttr = c; ember/compiler/ir/causal_mask.h says what each kernel may then skip.
#include <ember/compiler/ir/causal_mask.h>
#include <ember/compiler/transform.h>

#include <algorithm>

namespace ember {
namespace compiler {
namespace {

// The c of a mask [rows][columns] whose row m is masked exactly from column min(m + c, columns)
// on, or 0 (another mask, or one that masks nothing).
int64_t CausalOffset(const HostTensor& mask, int64_t rows, int64_t columns) {
  int64_t offset = 0;
  for (int64_t m = 0; m < rows; ++m) {
    int64_t end = columns;  // one past the last key row m keeps
    while (end > 0 && mask.GetAsDouble(m * columns + end - 1) <= kMaskedAtMost) --end;
    if (m == 0) offset = end;
    if (offset < 1 || end != std::min(m + offset, columns)) return 0;
  }
  return offset < columns ? offset : 0;
}

// The mask operand of `add` when it is a float32 constant [1, ..., 1, M, N] added to float32
// scores [..., M, N], else -1.
int MaskOf(const Graph& g, const Node& add) {
  for (int i = 0; i < 2; ++i) {
    const Value& mask = g.value(add.inputs[static_cast<size_t>(i)]);
    const TensorType& m = mask.type;
    const TensorType& s = g.value(add.inputs[static_cast<size_t>(1 - i)]).type;
    if (!mask.is_constant() || m.dtype != kFloat32 || s.dtype != kFloat32 || m.ndim() < 2 ||
        m.ndim() > s.ndim() || !std::equal(m.shape.end() - 2, m.shape.end(), s.shape.end() - 2) ||
        !std::all_of(m.shape.begin(), m.shape.end() - 2, [](int64_t d) { return d == 1; })) {
      continue;
    }
    return add.inputs[static_cast<size_t>(i)];
  }
  return -1;
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
  for (Node& add : nodes) {
    if (add.op != "Add" || add.inputs.size() != 2 || add.outputs.size() != 1) continue;
    const int mask = MaskOf(*graph, add), scores = add.outputs[0];
    const auto s = static_cast<size_t>(scores);
    // Read by the Softmax alone (UseCounts counts graph outputs too): -inf stored for the masked
    // scores is then seen only as the zero weight the mask gives them anyway.
    if (mask < 0 || uses[s] != 1 || readers[s].size() != 1) continue;
    Node& softmax = nodes[readers[s][0]];
    const TensorType& t = graph->value(scores).type;
    if (softmax.op != "Softmax" || !OverLastAxis(softmax, t.ndim())) continue;
    const int64_t c =
        CausalOffset(*graph->value(mask).constant, t.shape[t.shape.size() - 2], t.shape.back());
    if (c == 0) continue;
    add.attrs[kCausalFromAttr] = c;
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
