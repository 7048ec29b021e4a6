// graph.json as plain structs: the parser and the consistency checks the executor relies on.
//
// The format (TVM's graph executor JSON, v0.8-v0.17):
//   {
//     "nodes": [ {"op": "null", "name": "x", "inputs": []},
//                {"op": "tvm_op", "name": "add0", "inputs": [[0, 0, 0], [1, 0, 0]],
//                 "attrs": {"func_name": "add", "num_inputs": "2", "num_outputs": "1",
//                           "flatten_data": "0"}} ],
//     "arg_nodes": [0, 1],              // the "null" nodes: inputs and params
//     "node_row_ptr": [0, 1, 2, 3],     // node i's outputs are entries [row_ptr[i], row_ptr[i+1])
//     "heads": [[2, 0, 0]],             // graph outputs as [node, output index, version]
//     "attrs": { "dltype": ["list_str", ["float32", ...]],        // one per entry
//                "shape": ["list_shape", [[1, 4], ...]],          // one per entry
//                "storage_id": ["list_int", [0, 1, 2]],           // one per entry
//                "device_index": ["list_int", [1, 1, 1]] }        // optional
//   }
// Node attrs may also be spelled "attr" or, in old NNVM graphs, "param"; attr values are strings
// (numbers are accepted too). Input entries may omit the version. Unknown keys are skipped.
// Ember's one addition: an input node's attrs may hold "bound_at_compile_time": "VALUE", an input
// emberc --bind made a constant; nothing reads it and the executor refuses a value for it.
#ifndef EMBER_RUNTIME_GRAPH_EXECUTOR_GRAPH_JSON_H_
#define EMBER_RUNTIME_GRAPH_EXECUTOR_GRAPH_JSON_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ember::runtime {

/*! \brief One output of one node. */
struct GraphEntry {
  uint32_t node_id = 0;
  uint32_t index = 0;
  uint32_t version = 0;
};

/*! \brief The func_name of a node that runs nothing: its output is its input's bytes. */
constexpr const char* kNopFunc = "__nop";

struct GraphNode {
  std::string op;  // "null" or "tvm_op"
  std::string name;
  std::vector<GraphEntry> inputs;
  // tvm_op attributes.
  std::string func_name;
  uint32_t num_inputs = 1;
  uint32_t num_outputs = 1;
  bool flatten_data = false;
  // "null" nodes: "bound_at_compile_time" marks an input emberc --bind fixed; it holds the value.
  bool bound = false;
  std::string bound_value;
};

struct Graph {
  std::vector<GraphNode> nodes;
  std::vector<uint32_t> arg_nodes;
  std::vector<uint32_t> node_row_ptr;
  std::vector<GraphEntry> heads;
  std::vector<std::string> dltype;
  std::vector<std::vector<int64_t>> shape;
  std::vector<int64_t> storage_id;
  std::vector<int64_t> device_index;  // empty when absent

  uint32_t EntryId(uint32_t nid, uint32_t index) const { return node_row_ptr[nid] + index; }
  uint32_t EntryId(const GraphEntry& e) const { return EntryId(e.node_id, e.index); }
  size_t NumEntries() const { return node_row_ptr.empty() ? 0 : node_row_ptr.back(); }
};

/*!
 * \brief Parses graph JSON text and checks it is self-consistent (every index in range, every
 * per-entry list the right length, nodes in topological order) and that its storage plan never
 * shares storage between live values (storage_plan_check.h). Throws Error naming \p source
 * and the field or node at fault; never crashes on malformed input.
 */
Graph ParseGraphJson(const std::string& json, const std::string& source = "graph.json");

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_GRAPH_EXECUTOR_GRAPH_JSON_H_
