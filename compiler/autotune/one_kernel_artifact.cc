// One fused group as an artifact (see one_kernel_artifact.h).
#include "one_kernel_artifact.h"

#include <ember/compiler/backend.h>
#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/tensor_type.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "runtime/json_string.h"

namespace ember::compiler::autotune {

namespace {

std::string ShapeJson(const TensorType& t) {
  std::string s = "[";
  for (size_t d = 0; d < t.shape.size(); ++d) s += (d ? ", " : "") + std::to_string(t.shape[d]);
  return s + "]";
}

}  // namespace

std::string OneKernelGraphJson(const FusedGroup& g) {
  std::vector<const TensorType*> entries;  // inputs, then the kernel's outputs
  std::ostringstream nodes, args, inputs, heads;
  const int num_inputs = static_cast<int>(g.inputs.size());
  for (int i = 0; i < num_inputs; ++i) {
    nodes << "    {\"op\": \"null\", \"name\": \"arg" << i << "\", \"inputs\": []},\n";
    args << (i ? ", " : "") << i;
    inputs << (i ? ", " : "") << "[" << i << ", 0, 0]";
    entries.push_back(&g.graph->value(g.inputs[static_cast<size_t>(i)]).type);
  }
  nodes << "    {\"op\": \"tvm_op\", \"name\": " << runtime::JsonString(g.func_name)
        << ", \"attrs\": {\"func_name\": " << runtime::JsonString(g.func_name)
        << ", \"num_inputs\": \"" << num_inputs << "\", \"num_outputs\": \"" << g.outputs.size()
        << "\", \"flatten_data\": \"0\"}, \"inputs\": [" << inputs.str() << "]}";
  for (size_t o = 0; o < g.outputs.size(); ++o) {
    heads << (o ? ", " : "") << "[" << num_inputs << ", " << o << ", 0]";
    entries.push_back(&g.graph->value(g.outputs[o]).type);
  }
  std::ostringstream dltype, shape, storage;
  for (size_t e = 0; e < entries.size(); ++e) {
    dltype << (e ? ", " : "") << runtime::JsonString(DTypeToString(entries[e]->dtype));
    shape << (e ? ", " : "") << ShapeJson(*entries[e]);
    storage << (e ? ", " : "") << e;  // nothing shares: the kernel reads and writes each once
  }
  std::ostringstream js;
  js << "{\n  \"nodes\": [\n"
     << nodes.str() << "\n  ],\n  \"arg_nodes\": [" << args.str() << "],\n  \"heads\": ["
     << heads.str() << "],\n  \"attrs\": {\n    \"dltype\": [\"list_str\", [" << dltype.str()
     << "]],\n    \"shape\": [\"list_shape\", [" << shape.str()
     << "]],\n    \"storage_id\": [\"list_int\", [" << storage.str()
     << "]]\n  },\n  \"node_row_ptr\": [";
  for (int n = 0; n <= num_inputs + 1; ++n) {
    js << (n ? ", " : "")
       << (n <= num_inputs ? n : num_inputs + static_cast<int>(g.outputs.size()));
  }
  js << "]\n}\n";
  return js.str();
}

void WriteOneKernelArtifact(const FusedGroup& group, const std::string& dir) {
  std::ofstream f(dir + "/graph.json", std::ios::binary);
  f << OneKernelGraphJson(group);
  if (!f.flush()) throw CompileError("--tune: cannot write " + dir + "/graph.json");
  WriteParamsFile(dir + "/params.bin", {});
}

}  // namespace ember::compiler::autotune
