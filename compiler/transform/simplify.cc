// Simplify: removes nodes that do not change their input and merges reshape chains.
#include <ember/compiler/transform.h>

namespace ember {
namespace compiler {
namespace {

bool IsReshapeLike(const std::string& op) {
  return op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze";
}

bool AllEqual(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v) {
    if (e != x) return false;
  }
  return true;
}

// True when the node's only output equals its first input element for element.
bool IsNoOp(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == kAbsentValue) return false;
  const TensorType& in = g.value(n.inputs[0]).type;
  const TensorType& out = g.value(n.outputs[0]).type;
  if (n.op == "Identity" || n.op == "Dropout") return true;
  if (in != out) return false;
  if (n.op == "Cast" || n.op == "Expand" || n.op == "Reshape") return true;
  if (n.op == "Concat" && n.inputs.size() == 1) return true;
  if (n.op == "Transpose") {
    auto perm = n.GetInts("perm");
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  }
  if (n.op == "Slice") return AllEqual(n.GetInts("starts"), 0) && AllEqual(n.GetInts("steps"), 1);
  if (n.op == "Pad") return AllEqual(n.GetInts("pads"), 0);
  if (n.op == "Tile") return AllEqual(n.GetInts("repeats"), 1);
  return false;
}

}  // namespace

void Simplify(Graph* graph) {
  std::vector<Node> kept;
  std::vector<int> producer(graph->values().size(), -1);  // index into kept
  for (Node& n : graph->nodes()) {
    if (IsNoOp(*graph, n)) {
      graph->ReplaceAllUses(n.outputs[0], n.inputs[0]);
      continue;
    }
    if (IsReshapeLike(n.op)) {
      n.op = "Reshape";
      n.attrs = {{"__out_shape", graph->value(n.outputs[0]).type.shape}};
      // Reshape(Reshape(x)) -> Reshape(x); the inner one dies if nothing else reads it.
      int p = producer[static_cast<size_t>(n.inputs[0])];
      if (p >= 0 && kept[static_cast<size_t>(p)].op == "Reshape") {
        n.inputs[0] = kept[static_cast<size_t>(p)].inputs[0];
      }
      if (graph->value(n.inputs[0]).type == graph->value(n.outputs[0]).type) {
        graph->ReplaceAllUses(n.outputs[0], n.inputs[0]);
        continue;
      }
    }
    for (int out : n.outputs) producer[static_cast<size_t>(out)] = static_cast<int>(kept.size());
    kept.push_back(std::move(n));
  }
  graph->nodes() = std::move(kept);
  EliminateDeadCode(graph);
}

}  // namespace compiler
}  // namespace ember
