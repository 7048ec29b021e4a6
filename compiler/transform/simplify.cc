// Simplify: removes nodes that do not change their input and merges reshape chains. Which ops
// those are is registry data (OpDef::is_no_op, OpDef::reshape_like, registered in ir/ops.cc).
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

namespace ember {
namespace compiler {
namespace {

bool IsReshapeLike(const std::string& op) {
  const OpDef* def = OpRegistry::Global()->Find(op);
  return def != nullptr && def->reshape_like();
}

// True when the node's only output equals its first input element for element.
bool IsNoOp(const Graph& g, const Node& n) {
  if (n.outputs.size() != 1 || n.inputs.empty() || n.inputs[0] == kAbsentValue) return false;
  const OpDef* def = OpRegistry::Global()->Find(n.op);
  if (def == nullptr || !def->is_no_op()) return false;
  return def->is_no_op()(n, g.value(n.inputs[0]).type, g.value(n.outputs[0]).type);
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
      // Reshape(Reshape(x)) -> Reshape(x); the inner one dies if nothing else reads it. Every
      // reshape-like node kept has been written as a Reshape.
      int p = producer[static_cast<size_t>(n.inputs[0])];
      if (p >= 0 && IsReshapeLike(kept[static_cast<size_t>(p)].op)) {
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
