// BuildGraphArtifact: graph.json (TVM graph executor format) and the params list.
#include <ember/compiler/backend.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/runtime/ndarray.h>

#include <cstring>
#include <map>
#include <memory>
#include <sstream>

#include "runtime/json_string.h"

namespace ember {
namespace compiler {
namespace {

using runtime::JsonString;

struct Entry {
  int node;
  int index;
};

}  // namespace

GraphArtifact BuildGraphArtifact(const Graph& graph, const std::vector<FusedGroup>& groups) {
  GraphArtifact art;
  std::ostringstream nodes;
  std::vector<int> row_ptr{0};
  std::vector<int> arg_nodes;
  std::map<int, Entry> entry_of;       // value id -> (node, output index)
  std::vector<TensorType> entry_type;  // entry -> its type
  int node_count = 0;
  auto add_null = [&](const std::string& name, const TensorType& type, const std::string& attrs) {
    if (node_count) nodes << ",\n";
    nodes << "    {\"op\": \"null\", \"name\": " << JsonString(name) << attrs
          << ", \"inputs\": []}";
    arg_nodes.push_back(node_count);
    entry_type.push_back(type);
    row_ptr.push_back(row_ptr.back() + 1);
    ++node_count;
  };
  auto add_value = [&](int value_id) {
    entry_of[value_id] = {node_count, 0};
    add_null(graph.value(value_id).name, graph.value(value_id).type, "");
  };
  for (int in : graph.inputs()) add_value(in);
  // Inputs emberc --bind fixed stay input nodes that nothing reads, marked so that a runtime can
  // refuse a value for them (TVM's runtime, which skips the mark, takes and ignores one).
  for (const BoundInput& b : graph.bound_inputs) {
    add_null(b.name, b.type,
             ", \"attrs\": {\"bound_at_compile_time\": " + JsonString(b.value) + "}");
  }
  for (const FusedGroup& g : groups) {
    for (int in : g.inputs) {
      const Value& v = graph.value(in);
      if (entry_of.count(in) || !v.is_constant()) continue;  // kernel outputs come later
      add_value(in);
      art.params.emplace_back(v.name, v.constant);
    }
  }
  size_t first_op_entry = entry_type.size();
  std::vector<std::vector<int>> reads, writes;
  for (const FusedGroup& g : groups) {
    nodes << ",\n    {\"op\": \"tvm_op\", \"name\": " << JsonString(g.func_name)
          << ", \"attrs\": {\"func_name\": " << JsonString(g.func_name) << ", \"num_inputs\": \""
          << g.inputs.size() << "\", \"num_outputs\": \"" << g.outputs.size()
          << "\", \"flatten_data\": \"0\"";
    // The source node behind the kernel (its Conv/MatMul/pool/reduction), so tools can map
    // profile rows back to the model (bench/conv_gflops.py). Runtimes skip unknown attrs.
    if (g.anchor >= 0) {
      const Node& anchor = *g.nodes[static_cast<size_t>(g.anchor)];
      nodes << ", \"anchor\": " << JsonString(anchor.name);
      // A Winograd conv does fewer multiplications than its direct FLOP count says.
      if (anchor.HasAttr(kWinogradTileAttr)) {
        nodes << ", \"winograd_tile\": \"" << anchor.GetInt(kWinogradTileAttr, 0) << "\"";
      }
      // A second conv the kernel computes too (a depthwise conv fused with its 1x1 producer).
      for (size_t i = static_cast<size_t>(g.anchor) + 1; i < g.nodes.size(); ++i) {
        if (g.nodes[i]->op != anchor.op) continue;
        nodes << ", \"fused_anchor\": " << JsonString(g.nodes[i]->name);
        break;
      }
    }
    nodes << "}, \"inputs\": [";
    std::vector<int> r;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      auto it = entry_of.find(g.inputs[i]);
      if (it == entry_of.end()) {
        throw CompileError("internal: group " + g.func_name + " reads value '" +
                           graph.value(g.inputs[i]).name + "' before anything defines it");
      }
      nodes << (i ? ", " : "") << "[" << it->second.node << ", " << it->second.index << ", 0]";
      r.push_back(row_ptr[static_cast<size_t>(it->second.node)] + it->second.index);
    }
    nodes << "]}";
    std::vector<int> w;
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      entry_of[g.outputs[i]] = {node_count, static_cast<int>(i)};
      w.push_back(static_cast<int>(entry_type.size()));
      entry_type.push_back(graph.value(g.outputs[i]).type);
    }
    row_ptr.push_back(row_ptr.back() + static_cast<int>(g.outputs.size()));
    reads.push_back(r);
    writes.push_back(w);
    ++node_count;
  }
  std::ostringstream heads;
  std::vector<bool> pinned(entry_type.size(), false);
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    auto it = entry_of.find(graph.outputs()[i]);
    if (it == entry_of.end()) throw CompileError("internal: graph output has no producer");
    heads << (i ? ", " : "") << "[" << it->second.node << ", " << it->second.index << ", 0]";
    pinned[static_cast<size_t>(row_ptr[static_cast<size_t>(it->second.node)] + it->second.index)] =
        true;
  }
  std::vector<int64_t> bytes;
  std::vector<bool> is_op;
  for (size_t e = 0; e < entry_type.size(); ++e) {
    bytes.push_back(entry_type[e].ByteSize());
    is_op.push_back(e >= first_op_entry);
  }
  art.plan = PlanMemory(bytes, is_op, reads, writes, pinned);

  std::ostringstream js;
  js << "{\n  \"nodes\": [\n" << nodes.str() << "\n  ],\n  \"arg_nodes\": [";
  for (size_t i = 0; i < arg_nodes.size(); ++i) js << (i ? ", " : "") << arg_nodes[i];
  js << "],\n  \"heads\": [" << heads.str()
     << "],\n  \"attrs\": {\n    \"dltype\": [\"list_str\", [";
  for (size_t e = 0; e < entry_type.size(); ++e) {
    js << (e ? ", " : "") << JsonString(DTypeToString(entry_type[e].dtype));
  }
  js << "]],\n    \"shape\": [\"list_shape\", [";
  for (size_t e = 0; e < entry_type.size(); ++e) {
    js << (e ? ", " : "") << "[";
    const auto& s = entry_type[e].shape;
    for (size_t d = 0; d < s.size(); ++d) js << (d ? ", " : "") << s[d];
    js << "]";
  }
  js << "]],\n    \"storage_id\": [\"list_int\", [";
  for (size_t e = 0; e < art.plan.storage_id.size(); ++e) {
    js << (e ? ", " : "") << art.plan.storage_id[e];
  }
  js << "]]\n  },\n  \"node_row_ptr\": [";
  for (size_t i = 0; i < row_ptr.size(); ++i) js << (i ? ", " : "") << row_ptr[i];
  js << "]\n}\n";
  art.graph_json = js.str();
  return art;
}

namespace {

// A runtime array over a constant's own bytes: params.bin is written from the graph's constants
// without a copy of them (IS-Net's are 550 MB).
struct ConstantView {
  DLManagedTensor managed{};
  HostTensorPtr owner;
};

runtime::NDArray ViewOf(const std::string& name, const HostTensorPtr& t) {
  if (t->data.size() != static_cast<size_t>(t->type.ByteSize())) {
    throw CompileError("constant \"" + name + "\" holds " + std::to_string(t->data.size()) +
                       " bytes; its type needs " + std::to_string(t->type.ByteSize()));
  }
  auto view = std::make_unique<ConstantView>();
  view->owner = t;
  DLTensor& d = view->managed.dl_tensor;
  static uint8_t no_bytes;  // an empty constant's data: a pointer that is not null
  d.data = t->data.empty() ? &no_bytes : const_cast<uint8_t*>(t->data.data());
  d.device = DLDevice{kDLCPU, 0};
  d.ndim = static_cast<int32_t>(t->type.shape.size());
  d.dtype = t->type.dtype;
  d.shape = const_cast<int64_t*>(t->type.shape.data());  // FromDLPack copies the shape
  view->managed.manager_ctx = view.get();
  view->managed.deleter = [](DLManagedTensor* m) {
    delete static_cast<ConstantView*>(m->manager_ctx);
  };
  runtime::NDArray arr = runtime::NDArray::FromDLPack(&view->managed);
  view.release();  // the array's deleter owns it now
  return arr;
}

}  // namespace

void WriteParamsFile(const std::string& path,
                     const std::vector<std::pair<std::string, HostTensorPtr>>& params) {
  runtime::NamedArrays arrays;
  arrays.reserve(params.size());
  for (const auto& [name, t] : params) arrays.emplace_back(name, ViewOf(name, t));
  runtime::SaveParamsToFile(path, arrays);
}

}  // namespace compiler
}  // namespace ember
