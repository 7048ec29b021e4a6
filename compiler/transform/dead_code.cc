// EliminateDeadCode: drops nodes none of whose outputs is read, back to front.
#include <ember/compiler/transform.h>

namespace ember {
namespace compiler {

void EliminateDeadCode(Graph* graph) {
  std::vector<bool> live(graph->values().size(), false);
  for (int out : graph->outputs()) live[static_cast<size_t>(out)] = true;
  auto& nodes = graph->nodes();
  std::vector<bool> keep(nodes.size(), false);
  for (size_t i = nodes.size(); i-- > 0;) {
    for (int out : nodes[i].outputs) {
      if (live[static_cast<size_t>(out)]) keep[i] = true;
    }
    if (!keep[i]) continue;
    for (int in : nodes[i].inputs) {
      if (in != kAbsentValue) live[static_cast<size_t>(in)] = true;
    }
  }
  std::vector<Node> kept;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (keep[i]) kept.push_back(std::move(nodes[i]));
  }
  nodes = std::move(kept);
}

}  // namespace compiler
}  // namespace ember
