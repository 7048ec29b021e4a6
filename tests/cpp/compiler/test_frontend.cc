#include <ember/compiler/frontend.h>
#include <ember/compiler/ir/subgraph.h>
#include <gtest/gtest.h>

#include <functional>

#include "onnx_builder.h"

namespace ember {
namespace compiler {
namespace {

using testing::OnnxBuilder;

std::string ErrorOf(const std::string& bytes, const ImportOptions& opts = {}) {
  try {
    ImportOnnxBytes(bytes, "m.onnx", opts);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(Frontend, ImportsReluWithInitializerAsConstant) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).Input("w", {2, 3}).FloatInit("w", {2, 3}, {1, 2, 3, 4, 5, 6});
  b.Node("Add", "add", {"x", "w"}, {"s"});
  b.Node("Relu", "relu", {"s"}, {"y"});
  b.Output("y", {2, 3});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  ASSERT_EQ(g.inputs().size(), 1u);  // "w" is an initializer, not a runtime input
  EXPECT_EQ(g.value(g.inputs()[0]).name, "x");
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_TRUE(g.value(g.nodes()[0].inputs[1]).is_constant());
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[2,3]");
}

TEST(Frontend, UnsupportedOperatorNamesOpNodeAndOpset) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4}).Input("rois", {1, 5});
  OnnxBuilder::IntsAttr(b.Node("MaxRoiPool", "pool0", {"x", "rois"}, {"y"}), "pooled_shape",
                        {2, 2});
  b.Output("y", {1, 1, 2, 2});
  std::string err = ErrorOf(b.Bytes());
  EXPECT_NE(err.find("operator 'MaxRoiPool' (node 'pool0', opset 13) is not supported"),
            std::string::npos)
      << err;
}

TEST(Frontend, DynamicDimNeedsInputShape) {
  OnnxBuilder b;
  b.Input("data", {-1, 3});
  b.Node("Relu", "r", {"data"}, {"y"});
  b.Output("y", {-1, 3});
  std::string err = ErrorOf(b.Bytes());
  EXPECT_NE(err.find("input 'data' dimension 0 ('N') is dynamic; pass --input-shape data="),
            std::string::npos)
      << err;
  ImportOptions opts;
  opts.input_shapes["data"] = {5, 3};
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", opts);
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[5,3]");
  opts.input_shapes["nope"] = {1};
  EXPECT_NE(ErrorOf(b.Bytes(), opts).find("no input named 'nope'; inputs are: data"),
            std::string::npos);
}

// ONNX wants nodes sorted; converters write unsorted graphs that ONNX Runtime runs anyway.
TEST(Frontend, UnsortedNodesAreImportedInDataOrder) {
  OnnxBuilder b;
  b.Input("x", {2, 3});
  b.Node("Neg", "last", {"b"}, {"y"});
  b.Node("Relu", "second", {"a"}, {"b"});
  b.Node("Abs", "first", {"x"}, {"a"});
  b.Output("y", {2, 3});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  ASSERT_EQ(g.nodes().size(), 3u);
  EXPECT_EQ(g.nodes()[0].name, "first");
  EXPECT_EQ(g.nodes()[1].name, "second");
  EXPECT_EQ(g.nodes()[2].name, "last");
}

TEST(Frontend, ACycleIsRefusedNamingANodeOfIt) {
  OnnxBuilder b;
  b.Input("x", {2});
  b.Node("Add", "loop_a", {"x", "d"}, {"c"});
  b.Node("Relu", "loop_b", {"c"}, {"d"});
  b.Output("d", {2});
  std::string err = ErrorOf(b.Bytes());
  EXPECT_NE(err.find("m.onnx: node 'loop_a' (Add) is part of a cycle"), std::string::npos) << err;
}

// then_branch = Relu(x), else_branch = Neg(x): both read the outer input x.
void AddIfOnCondition(OnnxBuilder& b, const std::string& cond) {
  onnx::NodeProto* n = b.Node("If", "if0", {cond}, {"y"});
  const std::pair<const char*, const char*> branches[] = {{"then_branch", "Relu"},
                                                          {"else_branch", "Neg"}};
  for (const auto& [attr, op] : branches) {
    auto* a = n->add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::GRAPH);
    onnx::GraphProto* g = a->mutable_g();
    g->set_name(attr);
    auto* inner = g->add_node();
    inner->set_op_type(op);
    inner->set_name(std::string(attr) + "_op");
    inner->add_input("x");
    inner->add_output(std::string(attr) + "_out");
    auto* out = g->add_output();
    out->set_name(std::string(attr) + "_out");
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  }
}

TEST(Frontend, AnIfOnABoundInputFoldsToItsBranchAndTheInputIsRecorded) {
  for (int64_t rate : {16000, 8000}) {
    OnnxBuilder b;
    b.Input("x", {2}).Input("sr", {}, onnx::TensorProto::INT64).IntInit("k", {}, {16000});
    b.Node("Equal", "eq", {"sr", "k"}, {"c"});
    AddIfOnCondition(b, "c");
    b.Output("y", {2});
    ImportOptions opts;
    opts.bindings["sr"] = std::to_string(rate);
    Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", opts);
    ASSERT_EQ(g.inputs().size(), 1u);
    EXPECT_EQ(g.value(g.inputs()[0]).name, "x");
    ASSERT_EQ(g.bound_inputs.size(), 1u);
    EXPECT_EQ(g.bound_inputs[0].name, "sr");
    EXPECT_EQ(g.bound_inputs[0].value, std::to_string(rate));
    std::string ops;
    for (const Node& n : g.nodes()) ops += n.op + " ";
    EXPECT_NE(ops.find(rate == 16000 ? "Relu" : "Neg"), std::string::npos) << ops;
    EXPECT_EQ(ops.find(rate == 16000 ? "Neg" : "Relu"), std::string::npos) << ops;
    EXPECT_EQ(ops.find("If"), std::string::npos) << ops;
  }
}

// The If stays, its branches closed over what they read: x becomes an input of the If and each
// branch reads it through a formal input of its own.
TEST(Frontend, AnIfOnRunTimeDataStaysWithClosedBranches) {
  OnnxBuilder b;
  b.Input("x", {2}).Input("flag", {}, onnx::TensorProto::BOOL);
  AddIfOnCondition(b, "flag");
  b.Output("y", {2});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  ASSERT_EQ(g.nodes().size(), 1u);
  const Node& n = g.nodes()[0];
  EXPECT_EQ(n.op, "If");
  ASSERT_EQ(n.inputs.size(), 2u);
  EXPECT_EQ(g.value(n.inputs[0]).name, "flag");
  EXPECT_EQ(g.value(n.inputs[1]).name, "x");
  EXPECT_EQ(g.value(n.outputs[0]).type.ToString(), "float32[2]");
  for (const char* key : {"then_branch", "else_branch"}) {
    SubgraphPtr branch = n.GetSubgraph(key);
    ASSERT_EQ(branch->inputs.size(), 1u);
    ASSERT_EQ(branch->nodes.size(), 1u);
    EXPECT_EQ(branch->nodes[0].inputs, branch->inputs) << key;
  }
}

TEST(Frontend, AnIfWhoseBranchesDisagreeAndBadBindingsAreRefusedClearly) {
  OnnxBuilder b;
  b.Input("x", {2}).Input("flag", {}, onnx::TensorProto::BOOL).IntInit("two", {1}, {2});
  AddIfOnCondition(b, "flag");
  b.Output("y", {2});
  OnnxBuilder tiled = b;
  auto* else_node = tiled.model()
                        .mutable_graph()
                        ->mutable_node(0)
                        ->mutable_attribute(1)
                        ->mutable_g()
                        ->mutable_node(0);
  else_node->set_op_type("Tile");
  else_node->add_input("two");
  EXPECT_NE(ErrorOf(tiled.Bytes())
                .find("node 'if0' (If): output 0 is float32[2] from then_branch but float32[4] "
                      "from else_branch"),
            std::string::npos)
      << ErrorOf(tiled.Bytes());
  ImportOptions opts;
  opts.bindings["rate"] = "1";
  EXPECT_NE(ErrorOf(b.Bytes(), opts)
                .find("--bind rate: m.onnx has no input named 'rate'; "
                      "inputs are: x, flag"),
            std::string::npos);
  opts.bindings = {{"flag", "2"}};
  EXPECT_NE(ErrorOf(b.Bytes(), opts).find("is not a value of the input's type bool"),
            std::string::npos)
      << ErrorOf(b.Bytes(), opts);
  opts.bindings = {{"x", "1,2,3"}};
  EXPECT_NE(ErrorOf(b.Bytes(), opts).find("--bind x: the input float32[2] holds 2 values, got 3"),
            std::string::npos)
      << ErrorOf(b.Bytes(), opts);
  opts.bindings = {{"flag", "1"}};
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", opts);
  ASSERT_FALSE(g.nodes().empty());
  EXPECT_EQ(g.nodes()[0].op, "Relu");  // the then branch, then the copy to the If's output
  for (const Node& n : g.nodes()) EXPECT_NE(n.op, "If");
}

// How many nodes of g run `op` (an unrolled Loop or Scan: none of its own, one body per step).
int CountOps(const Graph& g, const std::string& op) {
  int count = 0;
  for (const Node& n : g.nodes()) count += n.op == op ? 1 : 0;
  return count;
}

using Formals = std::vector<std::pair<const char*, onnx::TensorProto::DataType>>;
using Steps = std::vector<std::tuple<const char*, std::vector<std::string>, const char*>>;

// Attribute `body` of n: a graph of inputs `formals` running `steps` (op, inputs, output), each
// step's output also an output of the graph.
void AddBody(onnx::NodeProto* n, const Formals& formals, const Steps& steps) {
  auto* a = n->add_attribute();
  a->set_name("body");
  a->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* body = a->mutable_g();
  body->set_name("body");
  for (const auto& [name, type] : formals) {
    auto* in = body->add_input();
    in->set_name(name);
    in->mutable_type()->mutable_tensor_type()->set_elem_type(type);
  }
  for (const auto& [op, ins, out] : steps) {
    auto* node = body->add_node();
    node->set_op_type(op);
    node->set_name(std::string("body_") + out);
    for (const auto& i : ins) node->add_input(i);
    node->add_output(out);
    body->add_output()->set_name(out);
  }
}

// Loop(M, cond, h): body h + x, scanned. M a constant (or bound) unrolls; else it is refused.
std::string LoopModel(bool constant_count) {
  OnnxBuilder b;
  b.Input("x", {2}).Input("h0", {2});
  if (constant_count) {
    b.IntInit("m", {}, {3});
  } else {
    b.Input("m", {}, onnx::TensorProto::INT64);
  }
  onnx::NodeProto* n = b.Node("Loop", "loop0", {"m", "", "h0"}, {"h", "hs"});
  AddBody(n,
          {{"i", onnx::TensorProto::INT64},
           {"c", onnx::TensorProto::BOOL},
           {"h_in", onnx::TensorProto::FLOAT}},
          {{"Identity", {"c"}, "c_out"},
           {"Add", {"h_in", "x"}, "h_out"},
           {"Identity", {"h_out"}, "scan"}});
  b.Output("h", {2}).Output("hs", {3, 2});
  return b.Bytes();
}

TEST(Frontend, ALoopOfKnownTripCountUnrollsAndADataDependentOneIsRefused) {
  Graph g = ImportOnnxBytes(LoopModel(true), "m.onnx", {});
  EXPECT_EQ(CountOps(g, "Loop"), 0);
  EXPECT_EQ(CountOps(g, "Add"), 3) << "one body per iteration";
  EXPECT_EQ(g.value(g.outputs()[1]).type.ToString(), "float32[3,2]");
  EXPECT_NE(ErrorOf(LoopModel(false))
                .find("node 'loop0' (Loop): its trip count M 'm' is computed from data at run "
                      "time"),
            std::string::npos)
      << ErrorOf(LoopModel(false));
}

// Scan(s0, xs): the body adds each element x of xs to the state s and scans the new state.
// Opset 8 has sequence_lens first ("lens", when given) and a batch axis in front.
std::string ScanModel(int64_t opset, const std::vector<int64_t>& xs,
                      const std::function<void(onnx::NodeProto*)>& attrs = nullptr,
                      const std::vector<int64_t>& lens = {}) {
  OnnxBuilder b(opset);
  const bool batched = opset < 9;
  std::vector<int64_t> state = {2};
  if (batched) state.insert(state.begin(), xs.empty() ? 1 : xs[0]);
  b.Input("s0", state).Input("xs", xs);
  std::vector<std::string> inputs = {"s0", "xs"};
  if (batched) {
    if (!lens.empty()) b.IntInit("lens", {static_cast<int64_t>(lens.size())}, lens);
    inputs.insert(inputs.begin(), lens.empty() ? "" : "lens");
  }
  onnx::NodeProto* n = b.Node("Scan", "scan0", inputs, {"s", "ys"});
  OnnxBuilder::IntAttr(n, "num_scan_inputs", 1);
  AddBody(n, {{"s_in", onnx::TensorProto::FLOAT}, {"x_in", onnx::TensorProto::FLOAT}},
          {{"Add", {"s_in", "x_in"}, "s_out"}, {"Identity", {"s_out"}, "scan"}});
  if (attrs) attrs(n);
  b.Output("s", std::vector<int64_t>(state.size(), -1));
  b.Output("ys", std::vector<int64_t>(state.size() + 1, -1));
  return b.Bytes();
}

TEST(Frontend, AScanUnrollsAlongItsAxesAndDirections) {
  // xs [2, 3] scanned along axis 1 backwards, the states stacked along axis 1: ys [2, 3].
  Graph g = ImportOnnxBytes(ScanModel(11, {2, 3},
                                      [](onnx::NodeProto* n) {
                                        OnnxBuilder::IntsAttr(n, "scan_input_axes", {1});
                                        OnnxBuilder::IntsAttr(n, "scan_input_directions", {1});
                                        OnnxBuilder::IntsAttr(n, "scan_output_axes", {-1});
                                      }),
                            "m.onnx", {});
  EXPECT_EQ(CountOps(g, "Scan"), 0);
  EXPECT_EQ(CountOps(g, "Add"), 3) << "one body per step";
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[2]");
  EXPECT_EQ(g.value(g.outputs()[1]).type.ToString(), "float32[2,3]");
  // Opset 8: two batch elements of 3 steps each; sequence_lens of full length is fine.
  Graph batched = ImportOnnxBytes(ScanModel(8, {2, 3, 2}, nullptr, {3, 3}), "m.onnx", {});
  EXPECT_EQ(batched.value(batched.outputs()[0]).type.ToString(), "float32[2,2]");
  EXPECT_EQ(batched.value(batched.outputs()[1]).type.ToString(), "float32[2,3,2]");
}

TEST(Frontend, MalformedScansAreRefusedNamingTheAttribute) {
  using Attrs = std::function<void(onnx::NodeProto*)>;
  auto ints = [](const char* key, std::vector<int64_t> v) -> Attrs {
    return [=](onnx::NodeProto* n) { OnnxBuilder::IntsAttr(n, key, v); };
  };
  const struct {
    std::string model;
    const char* message;
  } rows[] = {
      {ScanModel(11, {3, 2}, ints("scan_input_directions", {2})),
       "attribute 'scan_input_directions'[0] must be 0 (forward) or 1 (reverse), got 2"},
      {ScanModel(11, {3, 2}, ints("scan_input_axes", {-3})),
       "attribute 'scan_input_axes'[0] must be in [-2, 1] for input 'xs' of rank 2, got -3"},
      {ScanModel(11, {3, 2}, ints("scan_output_axes", {1, 0})),
       "attribute 'scan_output_axes' must hold 1 values (one per scan output), got 2"},
      {ScanModel(11, {3, 2}, ints("scan_output_axes", {2})),
       "attribute 'scan_output_axes'[0] must be in [-2, 1] for scan output 0 (rank 2), got 2"},
      {ScanModel(11, {3, 2}, ints("scan_output_directions", {-1})),
       "attribute 'scan_output_directions'[0] must be 0 (forward) or 1 (reverse), got -1"},
      {ScanModel(11, {}), "scan input 'xs' of rank 0 needs an axis to scan"},
      {ScanModel(11, {0, 2}), "its scan inputs are empty (0 steps, batch 1)"},
      {ScanModel(8, {0, 3, 2}), "its scan inputs are empty (3 steps, batch 0)"},
      {ScanModel(11, {1 << 20, 2}),
       "unrolling it takes more than 65536 nodes (1048576 steps of 2 nodes)"},
      {ScanModel(8, {2, 3, 2}, nullptr, {3, 2}),
       "sequence_lens[1] is 2, shorter than the sequence (3); emberc scans whole sequences"},
  };
  for (const auto& row : rows) {
    const std::string error = ErrorOf(row.model);
    EXPECT_NE(error.find("node 'scan0' (Scan): "), std::string::npos) << error;
    EXPECT_NE(error.find(row.message), std::string::npos) << error;
  }
}

// ONNX's training optimizers live in ai.onnx.preview.training, and their models import no ai.onnx
// opset: the op is named, not an opset 1 that the version converter cannot raise.
TEST(Frontend, AModelImportingNoAiOnnxOpsetNamesItsOp) {
  OnnxBuilder b;
  b.model().clear_opset_import();
  auto* domain = b.model().add_opset_import();
  domain->set_domain("ai.onnx.preview.training");
  domain->set_version(1);
  b.Input("r", {}).Input("t", {}, onnx::TensorProto::INT64).Input("x", {2}).Input("g", {2});
  b.Input("h", {2});
  b.Node("Adagrad", "", {"r", "t", "x", "g", "h"}, {"x_new", "h_new"})
      ->set_domain("ai.onnx.preview.training");
  b.Output("x_new", {2}).Output("h_new", {2});
  EXPECT_NE(ErrorOf(b.Bytes()).find("the model imports no ai.onnx opset; operator 'Adagrad' (node "
                                    "#0, domain 'ai.onnx.preview.training') is not supported"),
            std::string::npos)
      << ErrorOf(b.Bytes());
}

TEST(Frontend, RecurrentLayersExpandAndBadAttributesAreNamed) {
  auto lstm = [](const std::vector<std::string>& activations) {
    OnnxBuilder b(14);
    b.Input("x", {3, 1, 2}).FloatInit("w", {1, 8, 2}, std::vector<float>(16, 0.1f));
    b.FloatInit("r", {1, 8, 2}, std::vector<float>(16, 0.2f));
    onnx::NodeProto* n = b.Node("LSTM", "lstm0", {"x", "w", "r"}, {"y", "y_h"});
    OnnxBuilder::IntAttr(n, "hidden_size", 2);
    if (!activations.empty()) {
      auto* a = n->add_attribute();
      a->set_name("activations");
      a->set_type(onnx::AttributeProto::STRINGS);
      for (const auto& s : activations) a->add_strings(s);
    }
    b.Output("y", {3, 1, 1, 2}).Output("y_h", {1, 1, 2});
    return b.Bytes();
  };
  Graph g = ImportOnnxBytes(lstm({}), "m.onnx", {});
  int matmuls = 0;
  for (const Node& n : g.nodes()) {
    EXPECT_NE(n.op, "LSTM");
    matmuls += n.op == "MatMul" ? 1 : 0;
  }
  EXPECT_EQ(matmuls, 1 + 3) << "one input projection, one recurrent product per step";
  EXPECT_NE(ErrorOf(lstm({"Sigmoid", "Bogus", "Tanh"}))
                .find("node 'lstm0' (LSTM): activation "
                      "'bogus'"),
            std::string::npos)
      << ErrorOf(lstm({"Sigmoid", "Bogus", "Tanh"}));
  EXPECT_NE(
      ErrorOf(lstm({"Sigmoid", "Tanh"})).find("must name 3 functions (3 per direction), got 2"),
      std::string::npos);
}

// ONNX Runtime's quantizer writes com.microsoft ops; emberc takes the QLinear ones it expands
// and names the domain for the rest.
TEST(Frontend, OnnxRuntimeQuantizedOpsAreTakenAndOtherDomainsNamed) {
  auto model = [](const std::string& op) {
    OnnxBuilder b;
    auto* domain = b.model().add_opset_import();
    domain->set_domain("com.microsoft");
    domain->set_version(1);
    b.Input("x", {1, 4}, onnx::TensorProto::UINT8);
    b.FloatInit("s", {}, {0.5f}).FloatInit("t", {}, {0.25f});
    onnx::NodeProto* n = b.Node(op, "q0", {"x", "s", "", "t", ""}, {"y"});
    n->set_domain("com.microsoft");
    b.Output("y", {1, 4}, onnx::TensorProto::UINT8);
    return b.Bytes();
  };
  Graph g = ImportOnnxBytes(model("QLinearSigmoid"), "m.onnx", {});
  for (const Node& n : g.nodes()) EXPECT_NE(n.op, "QLinearSigmoid");
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "uint8[1,4]");
  EXPECT_NE(ErrorOf(model("QLinearLeakyRelu"))
                .find("node 'q0' (QLinearLeakyRelu): operator domain 'com.microsoft' is not "
                      "supported"),
            std::string::npos)
      << ErrorOf(model("QLinearLeakyRelu"));
}

TEST(Frontend, MalformedFileIsAnError) {
  EXPECT_NE(ErrorOf("this is not a protobuf \x01\x02\xff").find("not a valid ONNX model"),
            std::string::npos);
  EXPECT_NE(ErrorOf("").find("m.onnx"), std::string::npos);
}

TEST(Frontend, ShapeMathIsFoldedIntoStaticReshape) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])) : the exporter idiom.
  OnnxBuilder b;
  b.Input("x", {2, 3, 4});
  b.IntInit("zero", {}, {0}).IntInit("minus1", {1}, {-1}).IntInit("axes0", {1}, {0});
  b.Node("Shape", "shape", {"x"}, {"s"});
  OnnxBuilder::IntAttr(b.Node("Gather", "gather", {"s", "zero"}, {"n"}), "axis", 0);
  b.Node("Unsqueeze", "unsq", {"n", "axes0"}, {"n1"});
  OnnxBuilder::IntAttr(b.Node("Concat", "concat", {"n1", "minus1"}, {"shape2"}), "axis", 0);
  b.Node("Reshape", "reshape", {"x", "shape2"}, {"y"});
  b.Output("y", {2, 12});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  ASSERT_EQ(g.nodes().size(), 1u) << g.ToText();
  EXPECT_EQ(g.nodes()[0].op, "Reshape");
  EXPECT_EQ(g.nodes()[0].inputs.size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[2,12]");
}

// A Concat of constants where one is empty folds to the others (its empty input was handed to
// memcpy as a null pointer: UBSan, mutation sweep).
TEST(Frontend, ConcatOfAnEmptyConstantFolds) {
  OnnxBuilder b;
  b.Input("x", {2, 3, 4});
  b.IntInit("none", {0}, {}).IntInit("two", {1}, {2}).IntInit("minus1", {1}, {-1});
  OnnxBuilder::IntAttr(b.Node("Concat", "concat", {"two", "none", "minus1"}, {"shape"}), "axis", 0);
  b.Node("Reshape", "reshape", {"x", "shape"}, {"y"});
  b.Output("y", {2, 12});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[2,12]");
}

TEST(Frontend, NonConstantShapeInputIsRefusedClearly) {
  OnnxBuilder b;
  b.Input("x", {6}).Input("shape", {2}, onnx::TensorProto::INT64);
  b.Node("Reshape", "rs", {"x", "shape"}, {"y"});
  b.Output("y", {});
  std::string err = ErrorOf(b.Bytes());
  EXPECT_NE(err.find("node 'rs' (Reshape): input 1 ('shape', value 'shape') must be a constant"),
            std::string::npos)
      << err;
}

TEST(Frontend, OldOpsetAttributesBecomeCanonical) {
  OnnxBuilder b(10);
  b.Input("x", {1, 1, 5, 5});
  auto* pool = b.Node("MaxPool", "pool", {"x"}, {"p"});
  OnnxBuilder::IntsAttr(pool, "kernel_shape", {3, 3});
  auto* a = pool->add_attribute();
  a->set_name("auto_pad");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s("SAME_UPPER");
  b.Output("p", {1, 1, 5, 5});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  const Node& n = g.nodes().at(0);
  EXPECT_EQ(n.GetInts("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(n.GetInts("strides"), (std::vector<int64_t>{1, 1}));
  EXPECT_FALSE(n.HasAttr("auto_pad"));
  EXPECT_EQ(g.value(n.outputs[0]).type.ToString(), "float32[1,1,5,5]");
}

TEST(Frontend, DirectoryAsModelSaysItIsADirectory) {
  std::string dir = ::testing::TempDir();
  try {
    ImportOnnxFile(dir, {});
    ADD_FAILURE() << "a directory imported";
  } catch (const CompileError& e) {
    EXPECT_EQ(std::string(e.what()), dir + ": is a directory; give the model's .onnx file");
  }
}

TEST(Frontend, FailedOpsetConversionGivesTheReasonNotTheAssertion) {
  // libonnx 1.12's converter asserts on opset-1 broadcasting Mul it cannot map.
  OnnxBuilder b(1);
  b.Input("x", {2, 3, 4}).Input("s", {3});
  auto* mul = b.Node("Mul", "m", {"x", "s"}, {"y"});
  OnnxBuilder::IntAttr(mul, "broadcast", 1);
  OnnxBuilder::IntAttr(mul, "axis", 1);
  b.Output("y", {2, 3, 4});
  std::string err = ErrorOf(b.Bytes());
  EXPECT_NE(err.find("m.onnx: opset 1 is outside 7..26"), std::string::npos) << err;
  EXPECT_NE(err.find("export the model at opset 7 or later"), std::string::npos) << err;
  EXPECT_EQ(err.find("Assertion"), std::string::npos) << err;
  EXPECT_EQ(err.find(".cc:"), std::string::npos) << err;
}

// What PyTorch and tf2onnx export at opset 18 with IR 9, which Debian's libonnx (IR 8, opset 17)
// refuses: axes as inputs, Split's num_outputs, Resize's axes and keep_aspect_ratio_policy.
OnnxBuilder NewerOpsetModel(int64_t opset, int64_t ir_version) {
  OnnxBuilder b(opset);
  b.model().set_ir_version(ir_version);
  b.Input("x", {1, 8, 6, 6}).IntInit("hw", {2}, {2, 3}).IntInit("pads", {4}, {1, 2, 2, 1});
  b.IntInit("pad_axes", {2}, {-1, 2}).IntInit("sizes", {2}, {12, 9});
  b.Node("ReduceMean", "mean", {"x", "hw"}, {"m"});
  b.Node("Sub", "sub", {"x", "m"}, {"c"});
  auto* split = b.Node("Split", "split", {"c"}, {"s0", "s1", "s2"});
  OnnxBuilder::IntAttr(split, "axis", 1);
  OnnxBuilder::IntAttr(split, "num_outputs", 3);
  b.Node("Pad", "pad", {"s0", "pads", "", "pad_axes"}, {"p"});
  auto* resize = b.Node("Resize", "resize", {"s1", "", "", "sizes"}, {"r"});
  OnnxBuilder::IntsAttr(resize, "axes", {2, 3});
  OnnxBuilder::StringAttr(resize, "keep_aspect_ratio_policy", "not_larger");
  b.Output("m", {1, 8, 1, 1}).Output("s2", {1, 2, 6, 6}).Output("p", {1, 3, 9, 9});
  b.Output("r", {1, 3, 9, 9});
  return b;
}

TEST(Frontend, Opset18AndIr9ModelsImportWithTheNewSignatures) {
  for (auto [opset, ir] : {std::pair<int64_t, int64_t>{18, 9},
                           {21, 10},
                           {17, 10},
                           {22, 10},
                           {23, 11},
                           {24, 12},
                           {25, 13},
                           {26, 13}}) {
    OnnxBuilder b = NewerOpsetModel(opset, ir);
    if (opset == 17) {
      // Before 18 Reduce* take axes as an attribute, and Split, Pad, Resize the old forms.
      b = OnnxBuilder(17);
      b.model().set_ir_version(ir);
      b.Input("x", {1, 8, 6, 6});
      OnnxBuilder::IntsAttr(b.Node("ReduceMean", "mean", {"x"}, {"m"}), "axes", {2, 3});
      b.Output("m", {1, 8, 1, 1});
    }
    Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
    const char* want[] = {"float32[1,8,1,1]", "float32[1,2,6,6]", "float32[1,3,9,9]",
                          "float32[1,3,9,9]"};
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      EXPECT_EQ(g.value(g.outputs()[i]).type.ToString(), want[i]) << "opset " << opset << " " << i;
    }
  }
}

// A Resize given by sizes carries one scale per axis (out / in), as one given by scales does: the
// layout pass keeps a Resize of H and W alone blocked only when it sees all four.
TEST(Frontend, ResizeBySizesHasAScalePerAxis) {
  OnnxBuilder b(13);
  b.Input("x", {1, 8, 4, 5}).IntInit("sizes", {4}, {1, 8, 8, 15});
  OnnxBuilder::StringAttr(b.Node("Resize", "resize", {"x", "", "", "sizes"}, {"y"}), "mode",
                          "linear");
  b.Output("y", {1, 8, 8, 15});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  const Node* resize = nullptr;
  for (const Node& n : g.nodes()) {
    if (n.op == "Resize") resize = &n;
  }
  ASSERT_NE(resize, nullptr);
  EXPECT_EQ(resize->GetFloats("scales"), (std::vector<double>{1, 1, 2, 3}));
}

TEST(Frontend, GroupNormalizationScalesGroupsAtOpset18AndChannelsAt21) {
  for (int64_t opset : {18, 21}) {
    const int64_t n = opset == 18 ? 2 : 4;  // scale/bias: one per group, then one per channel
    OnnxBuilder b(opset);
    b.model().set_ir_version(opset == 18 ? 8 : 10);
    b.Input("x", {1, 4, 3}).FloatInit("s", {n}, std::vector<float>(n, 1.f));
    b.FloatInit("b", {n}, std::vector<float>(n, 0.f));
    OnnxBuilder::IntAttr(b.Node("GroupNormalization", "gn", {"x", "s", "b"}, {"y"}), "num_groups",
                         2);
    b.Output("y", {1, 4, 3});
    Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
    EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[1,4,3]") << opset;
    b.model().mutable_graph()->mutable_initializer(0)->clear_dims();
    b.model().mutable_graph()->mutable_initializer(0)->add_dims(n + 1);
    for (int i = 0; i < 1; ++i)
      b.model().mutable_graph()->mutable_initializer(0)->add_float_data(1);
    std::string err = ErrorOf(b.Bytes());
    EXPECT_NE(err.find("node 'gn' (GroupNormalization): scale must have shape [" +
                       std::to_string(n) + "] at opset " + std::to_string(opset)),
              std::string::npos)
        << err;
  }
}

TEST(Frontend, NewerModelsAreCheckedWhereLibonnxCannot) {
  OnnxBuilder b = NewerOpsetModel(18, 9);
  b.model().set_ir_version(14);
  EXPECT_NE(ErrorOf(b.Bytes()).find("m.onnx: IR version 14 is newer than emberc reads (at most "
                                    "13); export the model with IR version 13 or earlier"),
            std::string::npos)
      << ErrorOf(b.Bytes());

  b = NewerOpsetModel(27, 13);
  EXPECT_NE(ErrorOf(b.Bytes()).find("m.onnx: opset 27 is newer than emberc reads (7..26)"),
            std::string::npos);

  b = NewerOpsetModel(18, 9);
  b.Node("Relu", "relu", {"nowhere"}, {"y"});
  b.Output("y", {1});
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'relu' (Relu) reads 'nowhere', which no earlier node"),
            std::string::npos)
      << ErrorOf(b.Bytes());

  b = NewerOpsetModel(18, 9);
  b.Node("Relu", "relu", {"x"}, {"m"});  // "m" is ReduceMean's output already
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'relu' (Relu) defines 'm', which is already defined"),
            std::string::npos)
      << ErrorOf(b.Bytes());

  b = NewerOpsetModel(19, 9);
  constexpr int64_t kFloat8E4M3FN = 17;
  OnnxBuilder::IntAttr(b.Node("Cast", "cast", {"x"}, {"y"}), "to", kFloat8E4M3FN);
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'cast' (Cast): attribute 'to' asks for element type "
                                    "FLOAT8E4M3FN, which emberc does not support"),
            std::string::npos)
      << ErrorOf(b.Bytes());
}

TEST(Frontend, ElementTypesOfIr11To13AreRefusedByName) {
  const std::pair<int32_t, const char*> kTypes[] = {
      {23, "FLOAT4E2M1"}, {24, "FLOAT8E8M0"}, {25, "UINT2"}, {26, "INT2"}};
  for (const auto& [code, name] : kTypes) {
    OnnxBuilder b = NewerOpsetModel(25, 13);
    OnnxBuilder::IntAttr(b.Node("Cast", "cast", {"x"}, {"y"}), "to", code);
    EXPECT_NE(ErrorOf(b.Bytes()).find("node 'cast' (Cast): attribute 'to' asks for element type " +
                                      std::string(name) + ", which emberc does not support"),
              std::string::npos)
        << ErrorOf(b.Bytes());
  }
}

// Opset 23's RMSNormalization and 24's Swish import (their values: tests/python/
// test_newer_opsets.py); a scale that does not broadcast to the normalized axes is refused.
TEST(Frontend, RmsNormalizationAndSwishOfNewerOpsetsImport) {
  OnnxBuilder b(24);
  b.model().set_ir_version(12);
  b.Input("x", {2, 3}).FloatInit("scale", {3}, {1.f, 2.f, -1.f});
  b.Node("Swish", "swish", {"x"}, {"s"});
  b.Node("RMSNormalization", "rms", {"s", "scale"}, {"y"});
  b.Output("y", {2, 3});
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  EXPECT_EQ(g.value(g.outputs()[0]).type.ToString(), "float32[2,3]");

  b.model().mutable_graph()->mutable_initializer(0)->clear_dims();
  b.model().mutable_graph()->mutable_initializer(0)->add_dims(2);
  b.model().mutable_graph()->mutable_initializer(0)->mutable_float_data()->RemoveLast();
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'rms' (RMSNormalization): scale must be float32 and "
                                    "broadcast to the normalized shape [3], got float32[2]"),
            std::string::npos)
      << ErrorOf(b.Bytes());
}

// What RotaryEmbedding's shapes must agree on is checked naming the node (its values:
// gen_exported.py's rotary_opset23 against ONNX Runtime).
TEST(Frontend, RotaryEmbeddingOperandsAreChecked) {
  auto model = [](const std::vector<int64_t>& x, const std::vector<int64_t>& cache,
                  const std::vector<int64_t>& positions) {
    OnnxBuilder b(23);
    b.model().set_ir_version(11);
    b.Input("x", x).Input("pos", positions, onnx::TensorProto::INT64);
    int64_t n = 1;
    for (int64_t d : cache) n *= d;
    b.FloatInit("cos", cache, std::vector<float>(static_cast<size_t>(n), 1.f));
    b.FloatInit("sin", cache, std::vector<float>(static_cast<size_t>(n), 0.f));
    b.Node("RotaryEmbedding", "rope", {"x", "cos", "sin", "pos"}, {"y"});
    b.Output("y", x);
    return b;
  };
  EXPECT_EQ(
      ImportOnnxBytes(model({1, 2, 3, 8}, {6, 4}, {1, 3}).Bytes(), "m.onnx", {}).nodes().empty(),
      false);
  EXPECT_NE(ErrorOf(model({1, 2, 3, 8}, {6, 3}, {1, 3}).Bytes())
                .find("node 'rope' (RotaryEmbedding): cos_cache must be (max_position + 1, >= 4)"),
            std::string::npos)
      << ErrorOf(model({1, 2, 3, 8}, {6, 3}, {1, 3}).Bytes());
  EXPECT_NE(ErrorOf(model({1, 2, 3, 8}, {6, 4}, {1, 2}).Bytes())
                .find("position_ids must be int64[1,3], got int64[1,2]"),
            std::string::npos);
  EXPECT_NE(ErrorOf(model({1, 3, 16}, {6, 4}, {1, 3}).Bytes())
                .find("a 3-D X needs num_heads dividing its hidden size 16, got num_heads 0"),
            std::string::npos);
  OnnxBuilder odd = model({1, 2, 3, 8}, {6, 4}, {1, 3});
  OnnxBuilder::IntAttr(odd.model().mutable_graph()->mutable_node(0), "rotary_embedding_dim", 5);
  EXPECT_NE(ErrorOf(odd.Bytes())
                .find("rotary_embedding_dim must be even and at most the head size 8, got 5"),
            std::string::npos);
}

// What Attention's operands must agree on is checked naming the node (its values:
// gen_exported.py's attention_* models against ONNX Runtime).
TEST(Frontend, AttentionOperandsAreChecked) {
  auto model = [](const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                  const std::vector<int64_t>& v) {
    OnnxBuilder b(23);
    b.model().set_ir_version(11);
    b.Input("q", q).Input("k", k).Input("v", v);
    b.Node("Attention", "attn", {"q", "k", "v"}, {"y"});
    b.Output("y", {});
    return b;
  };
  EXPECT_FALSE(
      ImportOnnxBytes(model({1, 4, 3, 8}, {1, 2, 5, 8}, {1, 2, 5, 6}).Bytes(), "m.onnx", {})
          .nodes()
          .empty());
  const std::string mismatch = ErrorOf(model({1, 4, 3, 8}, {1, 3, 5, 8}, {1, 3, 5, 6}).Bytes());
  EXPECT_NE(mismatch.find("node 'attn' (Attention): Q [1,4,3,8], K [1,3,5,8] and V [1,3,5,6]"),
            std::string::npos)
      << mismatch;
  EXPECT_NE(ErrorOf(model({1, 3, 16}, {1, 5, 16}, {1, 5, 16}).Bytes())
                .find("a 3-D Q needs q_num_heads dividing its hidden size 16, got q_num_heads 0"),
            std::string::npos);
  OnnxBuilder mask = model({1, 2, 3, 8}, {1, 2, 5, 8}, {1, 2, 5, 8});
  mask.Input("m", {3, 4});
  mask.model().mutable_graph()->mutable_node(0)->add_input("m");
  EXPECT_NE(ErrorOf(mask.Bytes())
                .find("attn_mask must be bool or float32 and broadcast to "
                      "[1,2,3,5], got float32[3,4]"),
            std::string::npos)
      << ErrorOf(mask.Bytes());
  OnnxBuilder lens = model({2, 2, 3, 8}, {2, 2, 5, 8}, {2, 2, 5, 8});
  lens.model().mutable_opset_import(0)->set_version(24);
  lens.Input("n", {2, 1}, onnx::TensorProto::INT64);
  for (const char* input : {"", "", "", "n"}) {
    lens.model().mutable_graph()->mutable_node(0)->add_input(input);
  }
  EXPECT_NE(ErrorOf(lens.Bytes())
                .find("nonpad_kv_seqlen must be int64[2] (one count per batch), got int64[2,1]"),
            std::string::npos)
      << ErrorOf(lens.Bytes());
}

// Ops newer than libonnx have no schema there: Ember's own table of their signatures bounds the
// inputs and outputs and names a required input left empty (canonicalization reads it).
TEST(Frontend, NewerOpsWithoutARequiredInputAreRefusedNamingIt) {
  OnnxBuilder b(20);
  b.model().set_ir_version(9);
  b.Input("t", {1, 2, 3}).IntInit("size", {4}, {1, 1, 4, 4});
  b.Node("AffineGrid", "grid", {"t"}, {"g"});
  b.Output("g", {});
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'grid' (AffineGrid): takes 2 inputs, got 1"),
            std::string::npos)
      << ErrorOf(b.Bytes());

  OnnxBuilder a(24);
  a.model().set_ir_version(10);
  a.Input("q", {1, 2, 3, 8}).Input("v", {1, 2, 3, 8});
  a.Node("Attention", "attn", {"q", "", "v"}, {"y"});
  a.Output("y", {});
  EXPECT_NE(ErrorOf(a.Bytes()).find(
                "node 'attn' (Attention): input 1 (K) is required, got none (an empty name)"),
            std::string::npos)
      << ErrorOf(a.Bytes());
}

TEST(Frontend, AnIr9ModelAtAnOldOpsetStillMeetsLibonnxsCheckerButNotFloat8) {
  OnnxBuilder b(13);
  b.model().set_ir_version(9);
  b.Input("x", {2}).FloatInit("w", {2}, {1, 2});
  b.Node("Add", "add", {"x", "w"}, {"y"});
  b.Output("y", {2});
  EXPECT_EQ(ImportOnnxBytes(b.Bytes(), "m.onnx", {}).nodes().size(), 1u);
  constexpr int32_t kFloat8E5M2 = 19;
  b.model().mutable_graph()->mutable_initializer(0)->set_data_type(kFloat8E5M2);
  EXPECT_NE(
      ErrorOf(b.Bytes()).find(
          "m.onnx: initializer 'w' has element type FLOAT8E5M2, which emberc does not support"),
      std::string::npos)
      << ErrorOf(b.Bytes());
}

TEST(Frontend, NewerOpsEmberCannotRunAreRefusedNamingNodeAndOp) {
  OnnxBuilder b = NewerOpsetModel(18, 9);
  OnnxBuilder::IntAttr(b.model().mutable_graph()->mutable_node(4), "antialias", 1);
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'resize' (Resize): antialias=1 is not supported"),
            std::string::npos)
      << ErrorOf(b.Bytes());

  b = NewerOpsetModel(20, 9);
  b.Input("jpeg", {100}, onnx::TensorProto::UINT8);
  b.Node("ImageDecoder", "decode", {"jpeg"}, {"y"});
  b.Output("y", {}, onnx::TensorProto::UINT8);
  EXPECT_NE(
      ErrorOf(b.Bytes()).find("operator 'ImageDecoder' (node 'decode', opset 20) is not supported"),
      std::string::npos)
      << ErrorOf(b.Bytes());

  b = NewerOpsetModel(19, 9);
  OnnxBuilder::StringAttr(b.model().mutable_graph()->mutable_node(3), "mode", "circular");
  EXPECT_NE(ErrorOf(b.Bytes()).find(
                "node 'pad' (Pad): mode 'circular' (valid: constant, reflect, edge, wrap)"),
            std::string::npos)
      << ErrorOf(b.Bytes());
}

TEST(Frontend, GatherWithConstantIndicesOutOfRangeIsRefused) {
  // ONNX Runtime reports the index; the kernel used to clamp it and return the last row.
  OnnxBuilder b;
  b.Input("x", {3, 4}).IntInit("rows", {2}, {-3, 1000000});
  OnnxBuilder::IntAttr(b.Node("Gather", "g", {"x", "rows"}, {"y"}), "axis", 0);
  b.Output("y", {2, 4});
  EXPECT_NE(ErrorOf(b.Bytes()).find("node 'g' (Gather): index 1000000 (element 1 of indices "
                                    "'rows') is out of range for axis 0 of size 3; valid: -3..2"),
            std::string::npos)
      << ErrorOf(b.Bytes());
}

TEST(Frontend, PadsAndSlicesOnnxRuntimeRefusesAreRefused) {
  // Reflect mirrored past the axis (the kernel read outside it), edge repeated nothing, and an
  // axis sliced twice took one of the two: ONNX Runtime refuses each.
  auto pad = [](const std::string& mode, const std::vector<int64_t>& shape, int64_t by) {
    OnnxBuilder b;
    b.Input("x", shape).IntInit("pads", {2}, {by, by});
    OnnxBuilder::StringAttr(b.Node("Pad", "p", {"x", "pads"}, {"y"}), "mode", mode);
    b.Output("y", {shape[0] + 2 * by});
    return ErrorOf(b.Bytes());
  };
  EXPECT_NE(pad("reflect", {2}, 5)
                .find("node 'p' (Pad): mode 'reflect' pads axis 0 of float32[2] "
                      "by 5, more than its size - 1 (1)"),
            std::string::npos);
  EXPECT_EQ(pad("reflect", {3}, 2), "");
  EXPECT_NE(pad("edge", {0}, 1)
                .find("mode 'edge' pads axis 0 of float32[0] by 1, which has no "
                      "element"),
            std::string::npos);
  OnnxBuilder slice;
  slice.Input("x", {4, 4}).IntInit("s", {2}, {0, 1}).IntInit("e", {2}, {4, 3});
  slice.IntInit("a", {2}, {0, -2});
  slice.Node("Slice", "sl", {"x", "s", "e", "a"}, {"y"});
  slice.Output("y", {});
  EXPECT_NE(ErrorOf(slice.Bytes()).find("node 'sl' (Slice): axes [0,-2] name axis 0 twice"),
            std::string::npos)
      << ErrorOf(slice.Bytes());
}

// ConstantOfShape(shape) + x, imported.
Graph FilledPlusX(const std::vector<int64_t>& shape) {
  OnnxBuilder b;
  b.Input("x", {1}).IntInit("shape", {static_cast<int64_t>(shape.size())}, shape);
  b.Node("ConstantOfShape", "c", {"shape"}, {"c_out"});
  b.Node("Add", "add", {"c_out", "x"}, {"y"});
  b.Output("y", shape);
  return ImportOnnxBytes(b.Bytes(), "m.onnx", {});
}

TEST(Frontend, HugeComputedConstantsAreNotMadeAtCompileTime) {
  // A 2 KB model asked emberc for a 40 GB ConstantOfShape (std::bad_alloc, or the OOM killer);
  // that size is now refused by the validator (over 2^32 elements), 1.6 GB still imports.
  Graph g = FilledPlusX({20000, 20000});
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op, "Expand");  // its kernel allocates at run time, or refuses to
  EXPECT_FALSE(g.value(g.nodes()[0].outputs[0]).is_constant());
  Graph s = FilledPlusX({2, 3});  // a small one still folds into a constant
  ASSERT_EQ(s.nodes().size(), 1u);
  EXPECT_TRUE(s.value(s.nodes()[0].inputs[0]).is_constant());

  OnnxBuilder range;
  range.Input("x", {1}).IntInit("start", {}, {0}).IntInit("limit", {}, {100000000});
  range.IntInit("delta", {}, {1});
  range.Node("Range", "r", {"start", "limit", "delta"}, {"r_out"});
  range.Node("Cast", "cast", {"r_out"}, {"y"});
  OnnxBuilder::IntAttr(range.model().mutable_graph()->mutable_node(1), "to", 1);
  range.Output("y", {100000000});
  EXPECT_NE(ErrorOf(range.Bytes())
                .find("node 'r' (Range): start 0, limit 1e+08 and delta 1 make "
                      "100000000 elements; emberc computes a Range at compile "
                      "time, up to 16777216 elements"),
            std::string::npos)
      << ErrorOf(range.Bytes());
}

// The ops a ConvTranspose of `stride` on [1, 2, 4, 4] (kernel 3, weight an initializer or a
// run-time input, `rank` spatial axes) is imported as.
std::vector<std::string> ConvTransposeImportedAs(int64_t stride, bool constant_weight,
                                                 int rank = 2) {
  OnnxBuilder b;
  std::vector<int64_t> x{1, 2}, w{2, 3}, y{1, 3};
  for (int i = 0; i < rank; ++i) {
    x.push_back(4);
    w.push_back(3);
    y.push_back(stride * 3 + 3);
  }
  b.Input("x", x).Output("y", y);
  if (constant_weight) {
    int64_t count = 1;
    for (int64_t d : w) count *= d;
    b.FloatInit("w", w, std::vector<float>(static_cast<size_t>(count), 0.5f));
  } else {
    b.Input("w", w);
  }
  OnnxBuilder::IntsAttr(b.Node("ConvTranspose", "ct", {"x", "w"}, {"y"}), "strides",
                        std::vector<int64_t>(static_cast<size_t>(rank), stride));
  Graph g = ImportOnnxBytes(b.Bytes(), "m.onnx", {});
  std::vector<std::string> ops;
  for (const Node& n : g.nodes()) ops.push_back(n.op);
  EXPECT_EQ(g.value(g.outputs()[0]).type.shape, y);
  return ops;
}

TEST(Frontend, ConvTransposeWithConstantWeightsBecomesAConvOverItsPhases) {
  using Ops = std::vector<std::string>;
  EXPECT_EQ(ConvTransposeImportedAs(2, true), (Ops{"Conv", "PhaseInterleave"}));
  EXPECT_EQ(ConvTransposeImportedAs(1, true), (Ops{"Conv"}));  // the crop is the conv's pads
  // Run-time weights and other ranks keep the direct lowering.
  EXPECT_EQ(ConvTransposeImportedAs(2, false), (Ops{"ConvTranspose"}));
  EXPECT_EQ(ConvTransposeImportedAs(2, true, 1), (Ops{"ConvTranspose"}));
  EXPECT_EQ(ConvTransposeImportedAs(2, true, 3), (Ops{"ConvTranspose"}));
}

TEST(Frontend, ParseInputShape) {
  auto [name, dims] = ParseInputShape("data=1,3,224,224");
  EXPECT_EQ(name, "data");
  EXPECT_EQ(dims, (std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_THROW(ParseInputShape("data"), CompileError);
  EXPECT_THROW(ParseInputShape("data=1,x"), CompileError);
}

}  // namespace
}  // namespace compiler
}  // namespace ember
