/*!
 * \file ember/compiler/backend.h
 * \brief Graph side of the artifact: memory plan, graph.json and params.bin.
 *
 * graph.json is TVM's graph executor format: "nodes" (op "null" for inputs and params, "tvm_op"
 * with attrs func_name/num_inputs/num_outputs/flatten_data), "arg_nodes", "node_row_ptr",
 * "heads", and "attrs" with "dltype" ["list_str"], "shape" ["list_shape"], "storage_id"
 * ["list_int"] — one entry per node output. Graph inputs come first (ONNX input order, ONNX
 * names), then params (named like their constant values), then one tvm_op per fused group.
 */
#ifndef EMBER_COMPILER_BACKEND_H_
#define EMBER_COMPILER_BACKEND_H_

#include <ember/compiler/ir/fused_group.h>

#include <string>
#include <utility>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief Storage assignment for every graph.json entry. */
struct MemoryPlan {
  std::vector<int> storage_id;            // per entry
  std::vector<int64_t> storage_bytes;     // per storage id
  int64_t activation_bytes = 0;           // planned storage of op outputs
  int64_t activation_bytes_no_reuse = 0;  // sum of op outputs' sizes
};

/*!
 * \brief Liveness-based planning: inputs and params own their storage; each op output takes a
 * freed storage (best fit by size, grown if needed) once every reader of its previous tenants
 * has run. Graph outputs are never reused.
 * \param entry_bytes bytes of each entry; \param is_op_output whether an entry is a kernel output;
 * \param reads per step (fused group) the entries it reads; \param writes per step the entries
 * it writes; \param pinned entries never freed (graph outputs).
 */
MemoryPlan PlanMemory(const std::vector<int64_t>& entry_bytes,
                      const std::vector<bool>& is_op_output,
                      const std::vector<std::vector<int>>& reads,
                      const std::vector<std::vector<int>>& writes, const std::vector<bool>& pinned);

struct GraphArtifact {
  std::string graph_json;
  std::vector<std::pair<std::string, HostTensorPtr>> params;
  MemoryPlan plan;
};

/*! \brief graph.json + params for the groups of `graph` (groups in topological order). */
GraphArtifact BuildGraphArtifact(const Graph& graph, const std::vector<FusedGroup>& groups);

/*! \brief params.bin through the runtime's writer. */
void WriteParamsFile(const std::string& path,
                     const std::vector<std::pair<std::string, HostTensorPtr>>& params);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_BACKEND_H_
