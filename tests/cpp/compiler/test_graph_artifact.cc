#include <ember/compiler/backend.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>
#include <gtest/gtest.h>

namespace ember {
namespace compiler {
namespace {

// graph.json for x[1,4] -> MatMul(w[4,2]) -> Relu, pinned byte for byte.
TEST(GraphArtifact, GoldenGraphJson) {
  Graph g;
  int x = g.AddValue("x", TensorType{{1, 4}, kFloat32});
  g.inputs().push_back(x);
  auto wt = std::make_shared<HostTensor>(TensorType{{4, 2}, kFloat32});
  int w = g.AddConstant("w", wt);
  int m = g.AddValue("m", TensorType{{1, 2}, kFloat32});
  int y = g.AddValue("y", TensorType{{1, 2}, kFloat32});
  g.nodes().push_back(Node{"MatMul", "mm", {}, {x, w}, {m}});
  g.nodes().push_back(Node{"Relu", "relu", {}, {m}, {y}});
  g.outputs().push_back(y);
  std::vector<FusedGroup> groups = FuseOps(&g, 3);
  GraphArtifact art = BuildGraphArtifact(g, groups);
  const char* kGolden = R"({
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "null", "name": "w", "inputs": []},
    {"op": "tvm_op", "name": "fused_matmul_relu", "attrs": {"func_name": "fused_matmul_relu", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0", "anchor": "mm"}, "inputs": [[0, 0, 0], [1, 0, 0]]}
  ],
  "arg_nodes": [0, 1],
  "heads": [[2, 0, 0]],
  "attrs": {
    "dltype": ["list_str", ["float32", "float32", "float32"]],
    "shape": ["list_shape", [[1, 4], [4, 2], [1, 2]]],
    "storage_id": ["list_int", [0, 1, 2]]
  },
  "node_row_ptr": [0, 1, 2, 3]
}
)";
  EXPECT_EQ(art.graph_json, kGolden);
  ASSERT_EQ(art.params.size(), 1u);
  EXPECT_EQ(art.params[0].first, "w");
}

TEST(PlanMemory, ReusesDeadActivationsButNotInputsOrOutputs) {
  // entries: 0 input; 1..4 a chain of kernel outputs of 100 bytes each; 4 is the graph output.
  std::vector<int64_t> bytes{100, 100, 100, 100, 100};
  std::vector<bool> is_op{false, true, true, true, true};
  std::vector<std::vector<int>> reads{{0}, {1}, {2}, {3}};
  std::vector<std::vector<int>> writes{{1}, {2}, {3}, {4}};
  std::vector<bool> pinned{false, false, false, false, true};
  MemoryPlan p = PlanMemory(bytes, is_op, reads, writes, pinned);
  EXPECT_EQ(p.activation_bytes_no_reuse, 400);
  EXPECT_EQ(p.activation_bytes, 200);  // ping-pong between two buffers
  EXPECT_NE(p.storage_id[1], p.storage_id[0]);
  EXPECT_NE(p.storage_id[1], p.storage_id[2]);
  EXPECT_EQ(p.storage_id[1], p.storage_id[3]);
  EXPECT_NE(p.storage_id[4], p.storage_id[0]);
}

TEST(PlanMemory, GrowsAReusedBufferWhenNeeded) {
  std::vector<int64_t> bytes{10, 10, 10, 40};
  std::vector<bool> is_op{false, true, true, true};
  std::vector<std::vector<int>> reads{{0}, {1}, {2}};
  std::vector<std::vector<int>> writes{{1}, {2}, {3}};
  MemoryPlan p = PlanMemory(bytes, is_op, reads, writes, {false, false, false, true});
  EXPECT_EQ(p.storage_id[3], p.storage_id[1]);
  EXPECT_EQ(p.storage_bytes[static_cast<size_t>(p.storage_id[3])], 40);
}

}  // namespace
}  // namespace compiler
}  // namespace ember
