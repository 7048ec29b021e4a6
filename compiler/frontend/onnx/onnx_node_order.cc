#include "frontend/onnx/onnx_node_order.h"

#include <ember/compiler/ir/tensor_type.h>

#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

namespace ember {
namespace compiler {

void SortNodesTopologically(onnx::GraphProto* graph, const std::string& source) {
  const int count = graph->node_size();
  std::unordered_map<std::string, int> producer;  // value name -> index of the node writing it
  for (int i = 0; i < count; ++i) {
    for (const std::string& out : graph->node(i).output()) {
      if (!out.empty()) producer.emplace(out, i);
    }
  }
  // Edges from each producer to its readers; waiting[i] counts node i's unproduced inputs.
  std::vector<std::vector<int>> readers(static_cast<size_t>(count));
  std::vector<int> waiting(static_cast<size_t>(count), 0);
  bool sorted = true;
  for (int i = 0; i < count; ++i) {
    for (const std::string& in : graph->node(i).input()) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end()) continue;
      readers[static_cast<size_t>(it->second)].push_back(i);
      ++waiting[static_cast<size_t>(i)];
      sorted = sorted && it->second < i;
    }
  }
  if (sorted) return;
  // Kahn's algorithm, always taking the ready node that came first in the file.
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int i = 0; i < count; ++i) {
    if (waiting[static_cast<size_t>(i)] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(static_cast<size_t>(count));
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int r : readers[static_cast<size_t>(i)]) {
      if (--waiting[static_cast<size_t>(r)] == 0) ready.push(r);
    }
  }
  if (static_cast<int>(order.size()) != count) {
    for (int i = 0; i < count; ++i) {
      if (waiting[static_cast<size_t>(i)] == 0) continue;
      const onnx::NodeProto& n = graph->node(i);
      throw CompileError(source + ": node '" + n.name() + "' (" + n.op_type() +
                         ") is part of a cycle: its inputs depend on its own outputs");
    }
  }
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Swap(graph->mutable_node());
  for (int i : order) graph->add_node()->Swap(nodes.Mutable(i));
}

}  // namespace compiler
}  // namespace ember
