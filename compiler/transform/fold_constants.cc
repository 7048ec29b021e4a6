// FoldConstants: every node whose inputs are all constants is evaluated on the host.
#include <ember/compiler/transform.h>

namespace ember {
namespace compiler {

void FoldConstants(Graph* graph) {
  std::vector<Node> kept;
  for (Node& n : graph->nodes()) {
    std::vector<HostTensorPtr> in;
    bool all_const = !n.inputs.empty();
    for (int id : n.inputs) {
      if (id == kAbsentValue) continue;
      if (!graph->value(id).is_constant()) all_const = false;
      in.push_back(graph->value(id).constant);
    }
    std::vector<TensorType> out_types;
    for (int id : n.outputs) out_types.push_back(graph->value(id).type);
    std::vector<HostTensorPtr> folded;
    if (all_const && HostEvaluate(n, in, out_types, &folded)) {
      for (size_t i = 0; i < folded.size(); ++i) graph->value(n.outputs[i]).constant = folded[i];
      continue;
    }
    kept.push_back(std::move(n));
  }
  graph->nodes() = std::move(kept);
}

}  // namespace compiler
}  // namespace ember
