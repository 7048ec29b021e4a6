// graph.json parsing: the fields, the legacy spellings, and every refusal naming its field.
#include <ember/runtime/logging.h>
#include <gtest/gtest.h>

#include <string>

#include "../../../runtime/graph_executor/graph_json.h"

namespace {

using ember::runtime::Graph;
using ember::runtime::ParseGraphJson;

// x, w -> add(x, w) -> relu: two inputs, two ops, one output.
const char* kGraph = R"({
  "nodes": [
    {"op": "null", "name": "x", "inputs": []},
    {"op": "null", "name": "w", "inputs": [], "extra": {"ignored": [1, 2, {"deep": null}]}},
    {"op": "tvm_op", "name": "add0", "inputs": [[0, 0, 0], [1, 0, 0]],
     "attrs": {"func_name": "add", "num_inputs": "2", "num_outputs": "1", "flatten_data": "0",
               "hash": "abc"}},
    {"op": "tvm_op", "name": "relu0", "inputs": [[2, 0]],
     "attrs": {"func_name": "relu", "num_inputs": 1, "num_outputs": "1", "flatten_data": "1"}}
  ],
  "arg_nodes": [0, 1],
  "node_row_ptr": [0, 1, 2, 3, 4],
  "heads": [[3, 0, 0]],
  "attrs": {
    "dltype": ["list_str", ["float32", "float32", "float32", "float32"]],
    "shape": ["list_shape", [[2, 3], [2, 3], [2, 3], [2, 3]]],
    "storage_id": ["list_int", [0, 1, 2, 3]],
    "device_index": ["list_int", [1, 1, 1, 1]],
    "future_attr": ["list_str", ["a"]]
  },
  "metadata": {"version": 1}
})";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "test bug: " << from << " not in graph";
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// Expects \p json to be refused with a message containing \p part (and the source name).
void ExpectRefused(const std::string& json, const std::string& part) {
  try {
    ParseGraphJson(json, "g.json");
    ADD_FAILURE() << "accepted; expected an error containing: " << part;
  } catch (const ember::runtime::Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("g.json: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << "expected \"" << part << "\" in: " << msg;
  }
}

TEST(GraphJson, ParsesEveryField) {
  Graph g = ParseGraphJson(kGraph);
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(g.nodes[0].op, "null");
  EXPECT_EQ(g.nodes[1].name, "w");
  EXPECT_EQ(g.nodes[2].func_name, "add");
  EXPECT_EQ(g.nodes[2].num_inputs, 2u);
  EXPECT_FALSE(g.nodes[2].flatten_data);
  EXPECT_TRUE(g.nodes[3].flatten_data);
  EXPECT_EQ(g.nodes[3].inputs[0].node_id, 2u);
  EXPECT_EQ(g.nodes[3].inputs[0].version, 0u);
  EXPECT_EQ(g.arg_nodes, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(g.heads.size(), 1u);
  EXPECT_EQ(g.EntryId(g.heads[0]), 3u);
  EXPECT_EQ(g.dltype[3], "float32");
  EXPECT_EQ(g.shape[1], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g.storage_id, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(g.device_index.size(), 4u);
}

TEST(GraphJson, AcceptsLegacySpellings) {
  // NNVM-era graphs: "param" instead of "attrs", no node_row_ptr, no device_index.
  std::string legacy =
      Replace(kGraph, R"("attrs": {"func_name": "add")", R"("param": {"func_name": "add")");
  legacy = Replace(legacy, R"("node_row_ptr": [0, 1, 2, 3, 4],)", "");
  legacy = Replace(legacy, R"("device_index": ["list_int", [1, 1, 1, 1]],)", "");
  Graph g = ParseGraphJson(legacy);
  EXPECT_EQ(g.nodes[2].func_name, "add");
  EXPECT_EQ(g.node_row_ptr, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(g.device_index.empty());
}

TEST(GraphJson, MissingRequiredFieldsAreNamed) {
  ExpectRefused(Replace(kGraph, R"("arg_nodes": [0, 1],)", ""), "\"arg_nodes\"");
  ExpectRefused(Replace(kGraph, R"("heads": [[3, 0, 0]],)", ""), "\"heads\"");
  ExpectRefused(Replace(kGraph, R"("storage_id": ["list_int", [0, 1, 2, 3]],)", ""),
                "\"attrs.storage_id\"");
  ExpectRefused(
      Replace(kGraph, R"("dltype": ["list_str", ["float32", "float32", "float32", "float32"]],)",
              ""),
      "\"attrs.dltype\"");
  ExpectRefused(Replace(kGraph, R"({"op": "null", "name": "w", )", R"({"op": "null", )"),
                "nodes[1] has no \"name\"");
  ExpectRefused(Replace(kGraph, R"("func_name": "relu", )", ""),
                "node 3 (\"relu0\") has no \"func_name\"");
  ExpectRefused(
      Replace(kGraph, R"("num_outputs": "1", "flatten_data": "0")", R"("flatten_data": "0")"),
      "\"num_outputs\"");
}

TEST(GraphJson, InconsistentGraphsAreRefused) {
  ExpectRefused(Replace(kGraph, "[[2, 0]]", "[[3, 0]]"), "refers to node 3, which does not come");
  ExpectRefused(Replace(kGraph, "[[2, 0]]", "[[2, 1]]"), "uses output 1");
  ExpectRefused(Replace(kGraph, R"("heads": [[3, 0, 0]])", R"("heads": [[9, 0, 0]])"), "heads[0]");
  ExpectRefused(Replace(kGraph, R"("heads": [[3, 0, 0]])", R"("heads": [])"), "no outputs");
  ExpectRefused(Replace(kGraph, R"("arg_nodes": [0, 1])", R"("arg_nodes": [0, 2])"),
                "which is an operator");
  ExpectRefused(Replace(kGraph, R"("arg_nodes": [0, 1])", R"("arg_nodes": [0, 7])"),
                "arg_nodes lists node 7");
  ExpectRefused(Replace(kGraph, R"("arg_nodes": [0, 1])", R"("arg_nodes": [0, 0])"), "twice");
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3, 4]", "[0, 1, 2, 3]"), "node_row_ptr has 4 items");
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3, 4]", "[0, 1, 2, 4, 5]"), "outputs, but the node");
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3]", "[0, 1, 2]"), "attrs.storage_id has 3 items");
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3]", "[0, 1, 2, -1]"), "attrs.storage_id[3] is -1");
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3]", "[0, 1, 2, 99]"), "attrs.storage_id[3] is 99");
  ExpectRefused(Replace(kGraph, "[1, 1, 1, 1]", "[1, 1]"), "attrs.device_index has 2");
  ExpectRefused(
      Replace(kGraph, "[[2, 3], [2, 3], [2, 3], [2, 3]]", "[[2, 3], [2, -3], [2, 3], [2, 3]]"),
      "negative dimension");
  ExpectRefused(Replace(kGraph, R"("num_inputs": "2")", R"("num_inputs": "3")"),
                "has num_inputs 3 but lists 2");
  ExpectRefused(Replace(kGraph, R"("num_inputs": "2")", R"("num_inputs": "two")"),
                "attrs.num_inputs is \"two\"");
  ExpectRefused(
      Replace(kGraph, R"("op": "tvm_op", "name": "add0")", R"("op": "conv", "name": "add0")"),
      "has op \"conv\"");
  ExpectRefused(Replace(kGraph, R"(["list_int", [0, 1, 2, 3]])", R"(["list_str", [0, 1, 2, 3]])"),
                "expected \"list_int\"");
  ExpectRefused(Replace(kGraph, R"({"op": "null", "name": "x", "inputs": []})",
                        R"({"op": "null", "name": "x", "inputs": [[0, 0]]})"),
                "is an input (op \"null\") but lists 1 inputs");
}

TEST(GraphJson, StoragePlanMustNotShareLiveStorage) {
  // relu0 writing into the input x's storage: x is read again on the next run.
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3]", "[0, 1, 2, 0]"),
                "attrs.storage_id gives entry 3 (output of node 3 \"relu0\") storage 0, which "
                "entry 0 (input/param node 0 \"x\") still needs then");
  // relu0 would overwrite add0's output while reading it (kernels never work in place).
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3]", "[0, 1, 2, 2]"),
                "entry 3 (output of node 3 \"relu0\") storage 2, which entry 2");
  // Two params in one storage.
  ExpectRefused(Replace(kGraph, "[0, 1, 2, 3]", "[0, 0, 2, 3]"), "storage 0, which entry 0");
}

// a -> exp0 -> neg0 -> sq0 (head): exp0's output is dead once neg0 ran, so sq0 may reuse it.
const char* kChain = R"({
  "nodes": [
    {"op": "null", "name": "a", "inputs": []},
    {"op": "tvm_op", "name": "exp0", "inputs": [[0, 0, 0]],
     "attrs": {"func_name": "exp", "num_inputs": "1", "num_outputs": "1"}},
    {"op": "tvm_op", "name": "neg0", "inputs": [[1, 0, 0]],
     "attrs": {"func_name": "neg", "num_inputs": "1", "num_outputs": "1"}},
    {"op": "tvm_op", "name": "view0", "inputs": [[2, 0, 0]],
     "attrs": {"func_name": "__nop", "num_inputs": "1", "num_outputs": "1"}},
    {"op": "tvm_op", "name": "sq0", "inputs": [[3, 0, 0]],
     "attrs": {"func_name": "sq", "num_inputs": "1", "num_outputs": "1"}}
  ],
  "arg_nodes": [0],
  "heads": [[4, 0, 0]],
  "attrs": {
    "dltype": ["list_str", ["float32", "float32", "float32", "float32", "float32"]],
    "shape": ["list_shape", [[4], [4], [4], [4], [4]]],
    "storage_id": ["list_int", [0, 1, 2, 2, 1]]
  }
})";

TEST(GraphJson, StoragePlanMayReuseDeadStorageAndAliasNop) {
  Graph g = ParseGraphJson(kChain);
  EXPECT_EQ(g.storage_id, (std::vector<int64_t>{0, 1, 2, 2, 1}));
  // The "__nop" view keeps neg0's bytes alive until sq0 reads it.
  ExpectRefused(Replace(kChain, "[0, 1, 2, 2, 1]", "[0, 1, 2, 2, 2]"),
                "entry 4 (output of node 4 \"sq0\") storage 2, which entry 2");
  ExpectRefused(Replace(kChain, "[0, 1, 2, 2, 1]", "[0, 1, 2, 3, 1]"),
                "entry 3 (output of node 3 \"view0\") is a \"__nop\" output, so it must have "
                "the storage id of its input entry 2");
}

TEST(GraphJson, MalformedJsonIsAnErrorNotACrash) {
  ExpectRefused("", "malformed JSON");
  ExpectRefused("[]", "malformed JSON");
  ExpectRefused("{", "malformed JSON");
  ExpectRefused(std::string(kGraph).substr(0, 200), "malformed JSON");
  ExpectRefused(std::string(kGraph) + "}", "malformed JSON");
  ExpectRefused(R"({"nodes": [{"op": "null", "name": "x\q"}]})", "malformed JSON");
  ExpectRefused(R"({"nodes": 5})", "malformed JSON");
  ExpectRefused(R"({"heads": [["a", 0]]})", "heads[0] node id must be an integer");
  ExpectRefused(R"({"arg_nodes": [-1]})", "arg_nodes item is -1");
  ExpectRefused(R"({"x": )" + std::string(200, '[') + std::string(200, ']') + "}", "nested deeper");
  ExpectRefused(R"({"x": @})", "unexpected character '@'");
  ExpectRefused("{}", "required field \"nodes\"");
}

}  // namespace
