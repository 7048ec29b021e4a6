#include <ember/compiler/ir/causal_mask.h>
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/winograd.h>
#include <ember/compiler/target.h>
#include <ember/compiler/transform.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "kernel_test_util.h"

namespace ember {
namespace compiler {
namespace {

TensorType F32(std::vector<int64_t> s) { return TensorType{std::move(s), kFloat32}; }

HostTensorPtr Floats(std::vector<int64_t> shape, std::vector<float> v) {
  auto t = std::make_shared<HostTensor>(F32(std::move(shape)));
  for (size_t i = 0; i < v.size(); ++i) t->SetFromDouble(static_cast<int64_t>(i), v[i]);
  return t;
}

// Adds a node and infers its output type through the registry (as the frontend does).
int Add(Graph& g, const std::string& op, std::vector<int> in, AttrMap attrs = {}) {
  int out = g.AddValue(g.UniqueName(op + "_out"), TensorType{});
  Node n{op, op + "_" + std::to_string(g.nodes().size()), std::move(attrs), std::move(in), {out}};
  std::vector<TensorType> types;
  for (int i : n.inputs) types.push_back(g.value(i).type);
  g.value(out).type = InferNodeTypes(n, types).at(0);
  g.nodes().push_back(std::move(n));
  return out;
}

TEST(FoldConstants, EvaluatesConstantArithmetic) {
  Graph g;
  int x = g.AddValue("x", F32({2}));
  g.inputs().push_back(x);
  int a = g.AddConstant("a", Floats({2}, {1, 2}));
  int b = g.AddConstant("b", Floats({2}, {10, 20}));
  int s = Add(g, "Add", {a, b});
  int y = Add(g, "Mul", {x, s});
  g.outputs().push_back(y);
  FoldConstants(&g);
  ASSERT_EQ(g.nodes().size(), 1u);
  ASSERT_TRUE(g.value(s).is_constant());
  EXPECT_EQ(g.value(s).constant->ToDoubleVector(), (std::vector<double>{11, 22}));
}

TEST(HostEvaluate, GatherConcatSliceOnInt64) {
  Node gather{"Gather", "g", {{"axis", int64_t{0}}}, {0, 1}, {2}};
  std::vector<HostTensorPtr> out;
  ASSERT_TRUE(HostEvaluate(gather, {MakeInt64Tensor({5, 6, 7}), MakeInt64Tensor({2, -3})},
                           {TensorType{{2}, kInt64}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{7, 5}));
  Node concat{"Concat", "c", {{"axis", int64_t{0}}}, {0, 1}, {2}};
  ASSERT_TRUE(HostEvaluate(concat, {MakeInt64Tensor({1}), MakeInt64Tensor({2, 3})},
                           {TensorType{{3}, kInt64}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{1, 2, 3}));
  Node slice{"Slice",
             "s",
             {{"starts", std::vector<int64_t>{3}}, {"steps", std::vector<int64_t>{-2}}},
             {0},
             {1}};
  ASSERT_TRUE(
      HostEvaluate(slice, {MakeInt64Tensor({0, 1, 2, 3})}, {TensorType{{2}, kInt64}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{3, 1}));
}

// Shape math folds in int64 with ONNX's integer semantics; floats convert as Cast says.
TEST(HostEvaluate, IntegerArithmeticAndCastsFollowOnnx) {
  std::vector<HostTensorPtr> out;
  const TensorType i64{{4}, kInt64};
  auto lhs = MakeInt64Tensor({7, -7, 7, -7}), rhs = MakeInt64Tensor({2, 2, -2, -2});
  ASSERT_TRUE(HostEvaluate(Node{"Div", "d", {}, {0, 1}, {2}}, {lhs, rhs}, {i64}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{3, -3, -3, 3}));
  ASSERT_TRUE(HostEvaluate(Node{"Mod", "m", {}, {0, 1}, {2}}, {lhs, rhs}, {i64}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{1, 1, -1, -1}));
  ASSERT_TRUE(
      HostEvaluate(Node{"Mod", "f", {{"fmod", int64_t{1}}}, {0, 1}, {2}}, {lhs, rhs}, {i64}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{1, -1, 1, -1}));
  EXPECT_THROW(HostEvaluate(Node{"Div", "z", {}, {0, 1}, {2}}, {lhs, MakeInt64Tensor({1, 0, 1, 1})},
                            {i64}, &out),
               CompileError);
  auto floats = Floats({3}, {-1.5f, 0, 2.5f});
  ASSERT_TRUE(
      HostEvaluate(Node{"Cast", "c", {}, {0}, {1}}, {floats}, {TensorType{{3}, kInt64}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{-1, 0, 2}));
  ASSERT_TRUE(
      HostEvaluate(Node{"Cast", "b", {}, {0}, {1}}, {floats}, {TensorType{{3}, kBool}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{1, 0, 1}));
  Node prod{"ReduceProd", "p", {{"axes", std::vector<int64_t>{0}}}, {0}, {1}};
  ASSERT_TRUE(HostEvaluate(prod, {MakeInt64Tensor({2, 3, 4})}, {TensorType{{1}, kInt64}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{24}));
}

// A constant float outside the integer type's range (a -inf mask, a 1e30 sentinel) or NaN: a C++
// cast of it is undefined behaviour (the ASan/UBSan stage stopped emberc here); the fold
// saturates, NaN to 0, for every integer type and through Clip as well.
TEST(HostEvaluate, FloatsOutsideAnIntegerTypeSaturateWhenFolded) {
  std::vector<HostTensorPtr> out;
  const float inf = std::numeric_limits<float>::infinity();
  auto floats = Floats({6}, {1e30f, -1e30f, inf, -inf, std::nanf(""), -7.9f});
  const struct {
    DLDataType to;
    std::vector<int64_t> want;
  } rows[] = {
      {kInt64, {INT64_MAX, INT64_MIN, INT64_MAX, INT64_MIN, 0, -7}},
      {kInt32, {INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, -7}},
      {kInt8, {127, -128, 127, -128, 0, -7}},
      {kUInt8, {255, 0, 255, 0, 0, 0}},
      {kUInt16, {65535, 0, 65535, 0, 0, 0}},
  };
  for (const auto& row : rows) {
    ASSERT_TRUE(
        HostEvaluate(Node{"Cast", "c", {}, {0}, {1}}, {floats}, {TensorType{{6}, row.to}}, &out));
    EXPECT_EQ(out[0]->ToIntVector(), row.want) << DTypeToString(row.to);
  }
  EXPECT_EQ(floats->GetAsInt(0), INT64_MAX);
  EXPECT_EQ(floats->GetAsInt(4), 0);
  auto big = MakeInt64Tensor({INT64_MAX, INT64_MIN, 5});
  Node clip{"Clip", "k", {{"min", -1e300}, {"max", 1e300}}, {0}, {1}};
  ASSERT_TRUE(HostEvaluate(clip, {big}, {TensorType{{3}, kInt64}}, &out));
  EXPECT_EQ(out[0]->ToIntVector(), (std::vector<int64_t>{INT64_MAX, INT64_MIN, 5}));
}

// The registry decides: no fold, no evaluation, unless there is nothing to compute.
TEST(HostEvaluate, OpsWithoutAFoldDeclineUnlessTheResultIsEmpty) {
  std::vector<HostTensorPtr> out;
  Node softmax{"Softmax", "s", {{"axis", int64_t{0}}}, {0}, {1}};
  EXPECT_FALSE(HostEvaluate(softmax, {Floats({2}, {1, 2})}, {F32({2})}, &out));
  ASSERT_TRUE(HostEvaluate(softmax, {Floats({0}, {})}, {F32({0})}, &out));
  EXPECT_EQ(out[0]->type, F32({0}));
  EXPECT_FALSE(HostEvaluate(Node{"Sqrt", "q", {}, {0}, {1}}, {MakeInt64Tensor({4})},
                            {TensorType{{1}, kInt64}}, &out));
}

TEST(Simplify, RemovesIdentityAndNoOpsAndMergesReshapes) {
  Graph g;
  int x = g.AddValue("x", F32({2, 6}));
  g.inputs().push_back(x);
  int i = Add(g, "Identity", {x});
  int t = Add(g, "Transpose", {i}, {{"perm", std::vector<int64_t>{0, 1}}});
  int r1 = Add(g, "Reshape", {t}, {{"__out_shape", std::vector<int64_t>{3, 4}}});
  int r2 = Add(g, "Reshape", {r1}, {{"__out_shape", std::vector<int64_t>{12}}});
  int y = Add(g, "Relu", {r2});
  g.outputs().push_back(y);
  Simplify(&g);
  ASSERT_EQ(g.nodes().size(), 2u) << g.ToText();
  EXPECT_EQ(g.nodes()[0].op, "Reshape");
  EXPECT_EQ(g.nodes()[0].inputs[0], x);
  EXPECT_EQ(g.value(g.nodes()[0].outputs[0]).type.shape, (std::vector<int64_t>{12}));
  EXPECT_EQ(g.nodes()[1].op, "Relu");
}

TEST(Simplify, OutputThatIsAnIdentityOfTheInputKeepsItsSlot) {
  Graph g;
  int x = g.AddValue("x", F32({3}));
  g.inputs().push_back(x);
  g.outputs().push_back(Add(g, "Identity", {x}));
  Simplify(&g);
  EXPECT_TRUE(g.nodes().empty());
  EXPECT_EQ(g.outputs()[0], x);
}

// Which nodes forward their input is registry data (OpDef::is_no_op): a full Slice, a zero Pad
// and a one-input Concat go; a Cast that changes the dtype stays.
TEST(Simplify, DropsNoOpsTheRegistryNames) {
  Graph g;
  int x = g.AddValue("x", F32({2, 3}));
  g.inputs().push_back(x);
  int s = Add(g, "Slice", {x},
              {{"starts", std::vector<int64_t>{0, 0}},
               {"ends", std::vector<int64_t>{2, 3}},
               {"steps", std::vector<int64_t>{1, 1}},
               {"__out_shape", std::vector<int64_t>{2, 3}}});
  int p = Add(g, "Pad", {s},
              {{"pads", std::vector<int64_t>{0, 0, 0, 0}},
               {"mode", std::string("constant")},
               {"value", 0.0}});
  int c = Add(g, "Concat", {p}, {{"axis", int64_t{0}}});
  int y = Add(g, "Cast", {c}, {{"__dtype", std::string("int32")}});
  g.outputs().push_back(y);
  Simplify(&g);
  ASSERT_EQ(g.nodes().size(), 1u) << g.ToText();
  EXPECT_EQ(g.nodes()[0].op, "Cast");
  EXPECT_EQ(g.nodes()[0].inputs[0], x);
}

Graph ConvBn(bool with_conv) {
  Graph g;
  int x = g.AddValue("x", F32({1, 2, 3, 3}));
  g.inputs().push_back(x);
  int v = x;
  if (with_conv) {
    int w = g.AddConstant("w", Floats({2, 2, 1, 1}, {1, 2, 3, 4}));
    int b = g.AddConstant("b", Floats({2}, {0.5f, -1}));
    v = Add(g, "Conv", {x, w, b},
            {{"kernel_shape", std::vector<int64_t>{1, 1}},
             {"strides", std::vector<int64_t>{1, 1}},
             {"dilations", std::vector<int64_t>{1, 1}},
             {"pads", std::vector<int64_t>{0, 0, 0, 0}},
             {"group", int64_t{1}}});
  }
  int gamma = g.AddConstant("gamma", Floats({2}, {2, 3}));
  int beta = g.AddConstant("beta", Floats({2}, {1, -1}));
  int mean = g.AddConstant("mean", Floats({2}, {0.5f, 1}));
  int var = g.AddConstant("var", Floats({2}, {4, 9}));
  int y = Add(g, "BatchNormalization", {v, gamma, beta, mean, var}, {{"epsilon", 0.0}});
  g.outputs().push_back(y);
  return g;
}

TEST(FoldBatchNorm, FoldsIntoConvWeightsAndBias) {
  Graph g = ConvBn(true);
  FoldBatchNorm(&g);
  EliminateDeadCode(&g);
  ASSERT_EQ(g.nodes().size(), 1u) << g.ToText();
  const Node& conv = g.nodes()[0];
  EXPECT_EQ(conv.op, "Conv");
  // s = gamma / sqrt(var) = {1, 1}; w unchanged; b' = (b - mean) * s + beta.
  EXPECT_EQ(g.value(conv.inputs[1]).constant->ToDoubleVector(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(g.value(conv.inputs[2]).constant->ToDoubleVector(), (std::vector<double>{1, -3}));
  EXPECT_EQ(g.outputs()[0], conv.outputs[0]);
}

TEST(FoldBatchNorm, WithoutConvBecomesMulAdd) {
  Graph g = ConvBn(false);
  FoldBatchNorm(&g);
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0].op, "Mul");
  EXPECT_EQ(g.nodes()[1].op, "Add");
  const Value& shift = g.value(g.nodes()[1].inputs[1]);
  EXPECT_EQ(shift.type.shape, (std::vector<int64_t>{2, 1, 1}));
  EXPECT_EQ(shift.constant->ToDoubleVector(), (std::vector<double>{0.5, -2}));  // beta - mean * s
}

// x -> Conv (2 phases x 2 channels) -> PhaseInterleave (stride 1x2) -> Add [2,1,1] -> Relu.
struct InterleavedGraph {
  Graph g;
  int conv, interleaved, added, y;

  InterleavedGraph() {
    int x = g.AddValue("x", F32({1, 1, 2, 2}));
    g.inputs().push_back(x);
    int w = g.AddConstant("w", Floats({4, 1, 1, 1}, {1, 2, 3, 4}));
    conv = Add(g, "Conv", {x, w},
               {{"kernel_shape", std::vector<int64_t>{1, 1}},
                {"strides", std::vector<int64_t>{1, 1}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                {"group", int64_t{1}}});
    interleaved = Add(g, "PhaseInterleave", {conv},
                      {{"strides", std::vector<int64_t>{1, 2}},
                       {"crop", std::vector<int64_t>{0, 1}},
                       {"out_size", std::vector<int64_t>{2, 3}},
                       {"group", int64_t{1}}});
    added = Add(g, "Add", {interleaved, g.AddConstant("c", Floats({2, 1, 1}, {10, 20}))});
    y = Add(g, "Relu", {added});
    g.outputs().push_back(y);
  }
};

TEST(SinkPhaseInterleave, AddFoldsIntoTheConvPerPhaseAndReluMovesBeforeTheInterleave) {
  InterleavedGraph m;
  EXPECT_EQ(m.g.value(m.interleaved).type.shape, (std::vector<int64_t>{1, 2, 2, 3}));
  SinkPhaseInterleave(&m.g);
  ASSERT_EQ(m.g.nodes().size(), 3u);
  const Node& conv = m.g.nodes()[0];
  EXPECT_EQ(conv.op, "Conv");
  ASSERT_TRUE(conv.HasInput(2));
  // Conv channel k is phase k / 2 of output channel k % 2.
  EXPECT_EQ(m.g.value(conv.inputs[2]).constant->ToDoubleVector(),
            (std::vector<double>{10, 20, 10, 20}));
  EXPECT_EQ(m.g.nodes()[1].op, "Relu");
  EXPECT_EQ(m.g.nodes()[1].inputs[0], conv.outputs[0]);
  EXPECT_EQ(m.g.nodes()[2].op, "PhaseInterleave");
  EXPECT_EQ(m.g.nodes()[2].inputs[0], m.g.nodes()[1].outputs[0]);
  EXPECT_EQ(m.g.nodes()[2].outputs[0], m.y);
  EXPECT_EQ(m.g.value(m.g.nodes()[1].outputs[0]).type.shape, (std::vector<int64_t>{1, 4, 2, 2}));
}

TEST(SinkPhaseInterleave, AnInterleaveReadTwiceOrANonChannelConstantStays) {
  InterleavedGraph twice;
  twice.g.outputs().push_back(twice.interleaved);
  SinkPhaseInterleave(&twice.g);
  ASSERT_EQ(twice.g.nodes().size(), 4u);
  EXPECT_EQ(twice.g.nodes()[1].op, "PhaseInterleave");

  InterleavedGraph spatial;
  spatial.g.nodes()[2].inputs[1] = spatial.g.AddConstant("row", Floats({3}, {1, 2, 3}));
  SinkPhaseInterleave(&spatial.g);
  ASSERT_EQ(spatial.g.nodes().size(), 4u);
  EXPECT_EQ(spatial.g.nodes()[1].op, "PhaseInterleave");
}

TEST(EliminateDeadCode, DropsUnreadNodes) {
  Graph g;
  int x = g.AddValue("x", F32({3}));
  g.inputs().push_back(x);
  Add(g, "Exp", {x});
  int y = Add(g, "Relu", {x});
  g.outputs().push_back(y);
  EliminateDeadCode(&g);
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, "Relu");
}

AttrMap GemmAttrs(int64_t trans_b) {
  return {{"alpha", 1.0}, {"beta", 1.0}, {"transA", int64_t{0}}, {"transB", trans_b}};
}

TEST(CanonicalizeDense, ConstantWeightsAreReadAsKByN) {
  Graph g;
  int x = g.AddValue("x", F32({2, 3}));
  int x3 = g.AddValue("x3", F32({4, 2, 3}));
  g.inputs() = {x, x3};
  // W as [N][K] = [[1, 2, 3], [4, 5, 6]] (a PyTorch Linear).
  int w_nk = g.AddConstant("w_nk", Floats({2, 3}, {1, 2, 3, 4, 5, 6}));
  int w_kn = g.AddConstant("w_kn", Floats({3, 2}, {1, 4, 2, 5, 3, 6}));
  int linear = Add(g, "Gemm", {x, w_nk, g.AddConstant("b", Floats({2}, {1, 2}))}, GemmAttrs(1));
  int dense = Add(g, "MatMul", {x, w_kn});
  int batched = Add(g, "MatMul", {x3, w_kn});  // 3-D: the 8 rows through one Gemm
  int activations =
      Add(g, "MatMul", {x, Add(g, "Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}})});
  g.outputs() = {linear, dense, batched, activations};
  CanonicalizeDense(&g);
  ASSERT_EQ(g.nodes().size(), 7u);
  for (int i : {0, 1, 3}) {
    const Node& n = g.nodes()[i];
    SCOPED_TRACE(n.name);
    EXPECT_EQ(n.op, "Gemm");
    EXPECT_EQ(n.GetInt("transB"), 0);
    EXPECT_EQ(n.GetFloat("alpha"), 1.0);
    const Value& w = g.value(n.inputs[1]);
    EXPECT_EQ(w.type.shape, (std::vector<int64_t>{3, 2}));
    EXPECT_EQ(w.constant->ToDoubleVector(), (std::vector<double>{1, 4, 2, 5, 3, 6}));
  }
  EXPECT_EQ(g.value(g.nodes()[0].outputs[0]).type.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(g.nodes()[0].inputs.size(), 3u);  // the bias stays
  // [4][2][3] -> Reshape [8][3] -> Gemm [8][2] -> Reshape [4][2][2], the MatMul's own output.
  const Node &rows = g.nodes()[2], &unrows = g.nodes()[4];
  EXPECT_EQ(rows.op, "Reshape");
  EXPECT_EQ(rows.inputs[0], x3);
  EXPECT_EQ(g.value(rows.outputs[0]).type.shape, (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(g.nodes()[3].inputs[0], rows.outputs[0]);
  EXPECT_EQ(g.value(g.nodes()[3].outputs[0]).type.shape, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(unrows.op, "Reshape");
  EXPECT_EQ(unrows.inputs[0], g.nodes()[3].outputs[0]);
  EXPECT_EQ(unrows.outputs[0], batched);
  EXPECT_EQ(unrows.GetInts("__out_shape"), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(g.nodes()[6].op, "MatMul");  // two activations: left alone
  EXPECT_EQ(g.UseCounts()[w_nk], 0);     // the Gemm reads a transposed copy
}

// PackDenseWeights on AVX-512 (panels of 64 columns): a 3 x 70 weight becomes one panel [1][3][64]
// then the 6 columns left as [3][6], for a one-row product too; narrow weights stay as they are.
TEST(PackDenseWeights, StoresPanelsForTheDenseKernel) {
  const Target avx512 = Target::Parse("llvm -mcpu=skylake-avx512");
  Graph g;
  int x = g.AddValue("x", F32({8, 3}));
  int row = g.AddValue("row", F32({1, 3}));
  g.inputs() = {x, row};
  std::vector<float> wv(3 * 70), narrow(3 * 40);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i);
  int w = g.AddConstant("w", Floats({3, 70}, wv));
  int wn = g.AddConstant("wn", Floats({3, 40}, narrow));
  int packed = Add(g, "Gemm", {x, w}, GemmAttrs(0));
  int gemv = Add(g, "Gemm", {row, w}, GemmAttrs(0));
  int thin = Add(g, "Gemm", {x, wn}, GemmAttrs(0));
  g.outputs() = {packed, gemv, thin};
  PlanKernels(&g, testing::StrategyFor(avx512));
  PackDenseWeights(&g);
  const Node& n = g.nodes()[0];
  EXPECT_EQ(KernelPlan::Of(n).kernel, "dense_avx512");
  ASSERT_EQ(n.GetInt(kPackedDenseWidthAttr, 0), 64);
  const Value& p = g.value(n.inputs[1]);
  EXPECT_EQ(p.type.shape, (std::vector<int64_t>{3, 70}));  // the declared shape stays
  std::vector<double> v = p.constant->ToDoubleVector();
  // W[r][c] = 70 r + c: panel element (r, c) at r * 64 + c, the rest (r, 64 + j) at 192 + 6 r + j.
  EXPECT_EQ(v[1 * 64 + 5], 70 + 5);
  EXPECT_EQ(v[2 * 64 + 63], 140 + 63);
  EXPECT_EQ(v[192 + 6 * 2 + 5], 140 + 69);
  EXPECT_EQ(v[192 + 0], 64);
  EXPECT_EQ(g.nodes()[1].GetInt(kPackedDenseWidthAttr, 0), 64);  // a GEMV streams panels too
  EXPECT_FALSE(g.nodes()[2].HasAttr(kPackedDenseWidthAttr));     // 40 columns: no full panel
}

AttrMap Conv1x1() {
  return {{"kernel_shape", std::vector<int64_t>{1, 1}},
          {"strides", std::vector<int64_t>{1, 1}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"pads", std::vector<int64_t>{0, 0, 0, 0}},
          {"group", int64_t{1}}};
}

AttrMap Conv3x3(int64_t stride) {
  return {{"kernel_shape", std::vector<int64_t>{3, 3}},
          {"strides", std::vector<int64_t>{stride, stride}},
          {"dilations", std::vector<int64_t>{1, 1}},
          {"pads", std::vector<int64_t>{1, 1, 1, 1}},
          {"group", int64_t{1}}};
}

// A 3 x 3 conv of `c` channels on a `size` x `size` plane (weights w[i] = (i % 1000) / 1000) as a
// graph output; *weight receives the weight's value id.
int AddConv3x3(Graph& g, int64_t c, int64_t size, int64_t stride, int* weight) {
  int x = g.AddValue(g.UniqueName("x"), F32({1, c, size, size}));
  g.inputs().push_back(x);
  std::vector<float> wv(c * c * 9);
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = static_cast<float>(i % 1000) / 1000;
  *weight = g.AddConstant(g.UniqueName("w"), Floats({c, c, 3, 3}, wv));
  int y = Add(g, "Conv", {x, *weight}, Conv3x3(stride));
  g.outputs().push_back(y);
  return y;
}

// ConvAsDense takes the convs no conv kernel takes, where their patches are small: a 1-D conv
// becomes Reshape - Gather - Gemm - Reshape - Transpose - Reshape (a Concat of one zero when it
// is padded); a conv the strategy plans, a grouped one, one whose patch rows would exceed 1 MB and
// one with a run-time weight stay convs, and so does every conv with schedules off (no dense
// kernel to run the product).
TEST(ConvAsDense, OnlyConvsWithoutAKernelAndWithSmallPatches) {
  const schedule::TableStrategy strategy =
      testing::StrategyFor(Target::Parse("llvm -mcpu=skylake-avx512"));
  auto conv1d = [](int64_t pad, int64_t group) {
    return AttrMap{{"kernel_shape", std::vector<int64_t>{3}},
                   {"strides", std::vector<int64_t>{2}},
                   {"dilations", std::vector<int64_t>{1}},
                   {"pads", std::vector<int64_t>{pad, pad}},
                   {"group", group}};
  };
  struct Case {
    const char* what;
    std::vector<int64_t> x, w;
    AttrMap attrs;
    bool constant_weight;
    std::vector<std::string> ops;  // the ops after the pass
  };
  const std::vector<Case> cases = {
      {"1-D, unpadded",
       {1, 4, 20},
       {6, 4, 3},
       conv1d(0, 1),
       true,
       {"Reshape", "Gather", "Gemm", "Reshape", "Transpose", "Reshape"}},
      {"1-D, padded",
       {1, 4, 20},
       {6, 4, 3},
       conv1d(1, 1),
       true,
       {"Reshape", "Concat", "Gather", "Gemm", "Reshape", "Transpose", "Reshape"}},
      {"1-D, grouped", {1, 4, 20}, {6, 2, 3}, conv1d(0, 2), true, {"Conv"}},
      {"1-D, run-time weight", {1, 4, 20}, {6, 4, 3}, conv1d(0, 1), false, {"Conv"}},
      {"1-D, patches past the bound", {1, 64, 8200}, {8, 64, 3}, conv1d(0, 1), true, {"Conv"}},
      {"2-D that the strategy plans", {1, 16, 8, 8}, {16, 16, 1, 1}, Conv1x1(), true, {"Conv"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Graph g;
    const int x = g.AddValue("x", F32(c.x));
    g.inputs().push_back(x);
    int w;
    if (c.constant_weight) {
      w = g.AddConstant(
          "w", Floats(c.w, std::vector<float>(TensorType{c.w, kFloat32}.NumElements(), 0.25f)));
    } else {
      w = g.AddValue("w", F32(c.w));
      g.inputs().push_back(w);
    }
    g.outputs().push_back(Add(g, "Conv", {x, w}, c.attrs));
    const TensorType y = g.value(g.outputs()[0]).type;
    ConvAsDense(&g, strategy);
    std::vector<std::string> ops;
    for (const Node& n : g.nodes()) ops.push_back(n.op);
    EXPECT_EQ(ops, c.ops);
    EXPECT_EQ(g.value(g.outputs()[0]).type.shape, y.shape);
  }
  StrategyOptions off;
  off.schedules = false;
  Graph g;
  const int x = g.AddValue("x", F32({1, 4, 20}));
  g.inputs().push_back(x);
  const int w = g.AddConstant("w", Floats({6, 4, 3}, std::vector<float>(72, 0.25f)));
  g.outputs().push_back(Add(g, "Conv", {x, w}, conv1d(0, 1)));
  ConvAsDense(&g, schedule::TableStrategy(Target::Parse("llvm -mcpu=skylake-avx512"), off));
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, "Conv");
}

// WinogradConvWeights on AVX-512 after the layout pass: F(4x4) where 4 x 4 tiles cover the
// plane exactly, F(2x2) where they would not (14 x 14), the direct kernel for 7 x 7 planes,
// strides and narrow convs; transformed weights laid out [36][OC/32][IC][32], values G g G^T.
TEST(WinogradConvWeights, TransformsThe3x3ConvsTheKernelTakes) {
  const Target avx512 = Target::Parse("llvm -mcpu=skylake-avx512");
  Graph g;
  int w56, w14, w7, ws, wn;  // only w56 is read back
  AddConv3x3(g, 64, 56, 1, &w56);
  AddConv3x3(g, 64, 14, 1, &w14);
  AddConv3x3(g, 64, 7, 1, &w7);
  AddConv3x3(g, 64, 28, 2, &ws);
  AddConv3x3(g, 16, 28, 1, &wn);
  const schedule::TableStrategy strategy = testing::StrategyFor(avx512);
  AlterConvLayout(&g, strategy);
  PlanKernels(&g, strategy);
  WinogradConvWeights(&g);
  PackConvWeights(&g);
  std::vector<const Node*> convs;
  for (const Node& n : g.nodes()) {
    if (n.op == "Conv") convs.push_back(&n);
  }
  ASSERT_EQ(convs.size(), 5u);
  EXPECT_EQ(convs[0]->GetInt(kWinogradTileAttr, 0), 4);
  EXPECT_EQ(convs[0]->GetInt(kWinogradBlockAttr, 0), 32);
  EXPECT_FALSE(convs[0]->HasAttr(kPackedWeightBlockAttr));  // PackConvWeights left it alone
  EXPECT_EQ(convs[1]->GetInt(kWinogradTileAttr, 0), 2);
  for (size_t i = 2; i < convs.size(); ++i) {
    EXPECT_FALSE(convs[i]->HasAttr(kWinogradTileAttr)) << i;
  }
  EXPECT_TRUE(convs[2]->HasAttr(kPackedWeightBlockAttr));  // packed for the direct kernel
  const Value& u = g.value(convs[0]->inputs[1]);
  ASSERT_EQ(u.type.shape, (std::vector<int64_t>{64, 64, 6, 6}));
  // Channel pair (o, i) = (37, 5): U = G g G^T, stored at [xi][o / 32][i][o % 32].
  const WinogradTransform& t = *FindWinogradTransform(4);
  std::vector<double> w = g.value(w56).constant->ToDoubleVector();
  std::vector<double> v = u.constant->ToDoubleVector();
  const int64_t o = 37, i = 5;
  for (int64_t p = 0; p < 6; ++p) {
    for (int64_t q = 0; q < 6; ++q) {
      double want = 0;
      for (int64_t kh = 0; kh < 3; ++kh) {
        for (int64_t kw = 0; kw < 3; ++kw) {
          want += t.g[p * 3 + kh] * t.g[q * 3 + kw] * w[((o * 64 + i) * 3 + kh) * 3 + kw];
        }
      }
      const double got = v[(((p * 6 + q) * 2 + o / 32) * 64 + i) * 32 + o % 32];
      EXPECT_NEAR(got, want, 1e-5 * (1 + std::fabs(want))) << p << "," << q;
    }
  }
}

TEST(WinogradConvWeights, NothingWithSchedulesDisabledOrWinogradOff) {
  const Target avx512 = Target::Parse("llvm -mcpu=skylake-avx512");
  for (const char* env : {"EMBER_DISABLE_SCHEDULES", "EMBER_NO_WINOGRAD"}) {
    testing::ScopedEnv off(env, "1");
    Graph g;
    int w;
    AddConv3x3(g, 64, 56, 1, &w);
    const schedule::TableStrategy strategy = testing::StrategyFor(avx512);
    AlterConvLayout(&g, strategy);
    PlanKernels(&g, strategy);
    WinogradConvWeights(&g);
    for (const Node& n : g.nodes()) {
      EXPECT_FALSE(n.HasAttr(kWinogradTileAttr)) << env << " " << n.name;
    }
  }
}

// The strategy pass names each conv's kernel and the weight layout it reads, from the knobs it
// is given (not the environment): the Winograd and direct kernels on AVX-512, the 1x1 kernel on
// AVX2 with its output-channel block, nothing at all with schedules off.
TEST(PlanKernels, NamesEachConvsKernelAndWeightLayout) {
  struct Case {
    const char* target;
    StrategyOptions options;
    const char* kernel_56;  // the 3x3 conv on a 56 x 56 plane
    int64_t winograd_tile;
  };
  StrategyOptions off, direct;
  off.schedules = false;
  direct.winograd = false;
  for (const Case& c : {Case{"llvm -mcpu=skylake-avx512", {}, "conv2d_nchw_ocvec_avx512", 4},
                        Case{"llvm -mcpu=skylake-avx512", direct, "conv2d_nchw_ocvec_avx512", 0},
                        Case{"llvm -mcpu=haswell", {}, "conv2d_nchw_ocvec_avx2", 4},
                        Case{"llvm -mcpu=skylake-avx512", off, "", 0}}) {
    SCOPED_TRACE(c.target);
    Graph g;
    int w;
    AddConv3x3(g, 64, 56, 1, &w);
    const int x = g.AddValue("x1", F32({1, 64, 56, 56}));
    g.inputs().push_back(x);
    std::vector<float> w1(64 * 64, 0.5f);
    const int y = Add(g, "Conv", {x, g.AddConstant("w1", Floats({64, 64, 1, 1}, w1))}, Conv1x1());
    g.outputs().push_back(y);
    const schedule::TableStrategy strategy(Target::Parse(c.target), c.options);
    PlanKernels(&g, strategy);
    const KernelPlan conv3 = KernelPlan::Of(g.nodes()[0]), conv1 = KernelPlan::Of(g.nodes()[1]);
    EXPECT_TRUE(KernelPlan::IsPlanned(g.nodes()[0]));
    EXPECT_EQ(conv1.winograd_tile, 0);
    if (!c.options.schedules) {
      EXPECT_EQ(conv3.kernel, "");
      EXPECT_EQ(conv1.kernel, "");
      EXPECT_EQ(conv1.weight_block, 0);
      continue;
    }
    // Without the layout pass both convs are NCHW: the 3x3 one runs channels-in-lanes (Winograd
    // needs blocked data, so no tile here), the 1x1 one the 1x1 kernel with OC blocks of 4.
    EXPECT_EQ(conv3.kernel, c.kernel_56);
    EXPECT_EQ(conv3.winograd_tile, 0);
    EXPECT_GT(conv3.weight_block, 0);
    EXPECT_EQ(conv1.kernel, std::string("conv2d_1x1_") + (c.kernel_56 + 18));
    EXPECT_EQ(conv1.weight_block, 4);
    // After the layout pass the 3x3 conv reads blocked data: Winograd where it is allowed.
    Graph blocked;
    AddConv3x3(blocked, 64, 56, 1, &w);
    AlterConvLayout(&blocked, strategy);
    PlanKernels(&blocked, strategy);
    for (const Node& n : blocked.nodes()) {
      if (n.op == "Conv") {
        EXPECT_EQ(KernelPlan::Of(n).winograd_tile, c.winograd_tile);
      }
    }
  }
}

// An integer conv (uint8 data, constant int8 weights) gets an int8 kernel only where the target
// has one and the operands qualify: vpdpbusd (AVX-512 VNNI, AVX-VNNI), Arm sdot / usdot
// (dotprod, i8mm) and, on NEON without them (Cortex-A72, ARMv7), smull + sadalp for any int8
// weights, vpmaddubsw (AVX-512BW, AVX2) only for weights whose pairs of products fit int16; SSE
// keeps the float path. PackConvWeights then stores the weights as the kernel streams them and
// folds the data's zero point (less the kernel's data offset) into the bias. Of the two forms,
// this 8x8 plane of 32 channels takes the channels-in-lanes one at 16 lanes (the pixels form's
// vectors would fill 80% of their lanes, for 36 dot steps) and the pixels-in-lanes one at 8 and 4
// (rows of 8 fill them).
TEST(PlanKernels, Int8KernelOnlyWhereTheTargetHasOneAndOperandsQualify) {
  static constexpr int64_t kZeroPoint = 7;
  auto integer_conv = [](Graph& g, int64_t group, bool constant_bias, bool wide_weights) {
    const int x = g.AddValue("x", TensorType{{1, 16, 8, 8}, kUInt8});
    g.inputs().push_back(x);
    auto w = std::make_shared<HostTensor>(TensorType{{32, 16 / group, 3, 3}, kInt8});
    for (int64_t i = 0; i < w->NumElements(); ++i) {
      w->SetFromDouble(i, wide_weights ? i % 256 - 128 : i % 7 - 3);
    }
    auto b = std::make_shared<HostTensor>(TensorType{{32}, kInt32});
    for (int64_t i = 0; i < 32; ++i) b->SetFromDouble(i, 100 * i);
    int bias = g.AddConstant("b", b);
    if (!constant_bias) {
      bias = g.AddValue("b_in", TensorType{{32}, kInt32});
      g.inputs().push_back(bias);
    }
    const AttrMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                        {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                        {"group", group},
                        {kDataZeroPointAttr, kZeroPoint}};
    g.outputs().push_back(Add(g, "Conv", {x, g.AddConstant("w", w), bias}, attrs));
    return w;
  };
  struct Case {
    const char* target;
    int64_t group;
    bool constant_bias;
    bool wide_weights;
    const char* kernel;  // "" for the float path
    int64_t block;       // output channels per packed weight block (1: pixels form), 0: float
    int64_t offset;      // subtracted from the unsigned data (128: Arm sdot's signed data)
    int64_t layout;      // the block its output is written in (the channels form's lanes), or 0
  };
  constexpr const char* kAarch64 = "llvm -mtriple=aarch64-linux-gnu";
  const std::string dotprod = std::string(kAarch64) + " -mattr=+dotprod";
  const std::string a76 = std::string(kAarch64) + " -mcpu=cortex-a76";
  const std::string i8mm = std::string(kAarch64) + " -mattr=+dotprod,+i8mm";
  const std::string a76_off = a76 + " -mattr=-dotprod";
  const std::string a72 = std::string(kAarch64) + " -mcpu=cortex-a72";
  for (const Case& c : {
           Case{"llvm -mcpu=cascadelake", 1, true, false, "conv2d_int8_avx512vnni", 16, 0, 16},
           Case{"llvm -mcpu=skylake-avx512 -mattr=+avx512vnni", 1, true, true,
                "conv2d_int8_avx512vnni", 16, 0, 16},
           Case{"llvm -mcpu=skylake-avx512", 1, true, false, "conv2d_int8_avx512bw", 16, 0, 16},
           Case{"llvm -mcpu=skylake-avx512", 1, true, true, "", 0, 0, 0},
           Case{"llvm -mcpu=alderlake", 1, true, true, "conv2d_int8_pixels_avxvnni", 1, 0, 8},
           Case{"llvm -mcpu=haswell", 1, true, false, "conv2d_int8_pixels_avx2", 1, 0, 8},
           Case{"llvm -mcpu=haswell", 1, true, true, "", 0, 0, 0},
           Case{"llvm -mcpu=x86-64-v2", 1, true, false, "", 0, 0, 0},
           Case{kAarch64, 1, true, true, "conv2d_int8_pixels_neon", 1, 128, 4},
           Case{a72.c_str(), 1, true, false, "conv2d_int8_pixels_neon", 1, 128, 4},
           Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon", 1, true, true,
                "conv2d_int8_pixels_neon32", 1, 128, 4},
           Case{"llvm -mtriple=armv7a-linux-gnueabihf -mattr=-neon", 1, true, false, "", 0, 0, 0},
           Case{dotprod.c_str(), 1, true, true, "conv2d_int8_pixels_neon_dotprod", 1, 128, 4},
           Case{a76.c_str(), 1, true, false, "conv2d_int8_pixels_neon_dotprod", 1, 128, 4},
           Case{i8mm.c_str(), 1, true, true, "conv2d_int8_pixels_neon_i8mm", 1, 0, 4},
           Case{a76_off.c_str(), 1, true, false, "conv2d_int8_pixels_neon", 1, 128, 4},
           Case{dotprod.c_str(), 2, true, false, "", 0, 0, 0},
           Case{"llvm -mcpu=cascadelake", 2, true, false, "", 0, 0, 0},
           Case{"llvm -mcpu=cascadelake", 1, false, false, "", 0, 0, 0},
       }) {
    SCOPED_TRACE(std::string(c.target) + " group " + std::to_string(c.group) +
                 (c.wide_weights ? " wide weights" : ""));
    Graph g;
    const HostTensorPtr w = integer_conv(g, c.group, c.constant_bias, c.wide_weights);
    EXPECT_TRUE(g.value(g.outputs()[0]).type.dtype == kInt32);  // 8-bit operands sum in int32
    const schedule::TableStrategy strategy(Target::Parse(c.target), StrategyOptions{});
    // Its 32 output channels fill the channels form's block, so AlterConvLayout makes the output
    // blocked and the channels form takes it (the pixels form writes NCHW rows only).
    EXPECT_EQ(strategy.ConvLayoutBlock(g, g.nodes()[0]), c.layout);
    PlanKernels(&g, strategy);
    const KernelPlan plan = KernelPlan::Of(g.nodes()[0]);
    EXPECT_EQ(plan.int8_dot, c.block > 0);
    EXPECT_EQ(plan.kernel, c.kernel);
    if (c.block == 0) continue;
    const int64_t block = c.block;
    EXPECT_EQ(plan.weight_block, block);
    EXPECT_EQ(plan.int8_data_offset, c.offset);
    PackConvWeights(&g);
    const Node& conv = g.nodes()[0];
    EXPECT_EQ(conv.GetInt(kPackedInt8WeightAttr, 0), block);
    EXPECT_EQ(conv.GetInt(kPackedInt8DataOffsetAttr, 0), c.offset);
    const Value& packed = g.value(conv.inputs[1]);
    ASSERT_EQ(packed.type.shape, (std::vector<int64_t>{32 / block, 4, 3, 3, block, kInt8DotDepth}));
    // Weight (o, i, kh, kw) = (21, 6, 2, 1) at [o / block][i / 4][kh][kw][o % block][i % 4].
    const int64_t at = ((((21 / block * 4 + 1) * 3 + 2) * 3 + 1) * block + 21 % block) * 4 + 2;
    EXPECT_EQ(packed.constant->GetAsDouble(at), w->GetAsDouble(((21 * 16 + 6) * 3 + 2) * 3 + 1));
    // The bias carries -(zero_point - offset) * sum(w) of its channel.
    double sum = 0;
    for (int64_t i = 0; i < 16 * 9; ++i) sum += w->GetAsDouble(21 * 16 * 9 + i);
    EXPECT_EQ(g.value(conv.inputs[2]).constant->GetAsDouble(21),
              2100 - (kZeroPoint - c.offset) * sum);
  }
}

// The channels form of the NEON widening dot (no sdot: Cortex-A72, ARMv7) reads each weight
// vector in halves order, bytes 0-1 of its 4 output channels first, then bytes 2-3, so that one
// smull per half multiplies them with no reordering; sdot's entry and the pixels form keep four
// consecutive bytes per channel. The plan carries the choice to PackConvWeights, which marks it.
// A 1x1 integer conv of 8 channels on `target` with `kernel` forced, its weights `weight(o, i)`,
// planned; the plan's kernel.
std::string PlannedInt8Kernel(Graph* g, const char* target, const char* kernel,
                              const std::function<int(int64_t, int64_t)>& weight) {
  const int x = g->AddValue("x", TensorType{{1, 8, 6, 6}, kUInt8});
  g->inputs().push_back(x);
  auto w = std::make_shared<HostTensor>(TensorType{{8, 8, 1, 1}, kInt8});
  for (int64_t i = 0; i < w->NumElements(); ++i) w->SetFromDouble(i, weight(i / 8, i % 8));
  auto b = std::make_shared<HostTensor>(TensorType{{8}, kInt32});
  const AttrMap attrs{{"kernel_shape", std::vector<int64_t>{1, 1}}, {kDataZeroPointAttr, 0}};
  g->outputs().push_back(
      Add(*g, "Conv", {x, g->AddConstant("w", w), g->AddConstant("b", b)}, attrs));
  StrategyOptions options;
  options.forced_schedule = kernel;
  PlanKernels(g, schedule::TableStrategy(Target::Parse(target), options));
  return KernelPlan::Of(g->nodes()[0]).kernel;
}

// The halves dot sums the products of input channels 4q + k and 4q + k + 2 (k < 2) in int16
// (smlal): any signed data byte times two weights of -128 there would leave it, so the channels
// form refuses such weights (the pixels form, exact for any weights, takes the conv); one -128,
// or two that the dot does not pair, are taken.
TEST(PlanKernels, HalvesDotOnlyWhereNoPairedWeightsAreBothMinus128) {
  struct Case {
    int64_t i, j;  // input channels of output channel 5 set to -128
    bool taken;
  };
  for (const Case& c : {Case{0, 2, false}, Case{5, 7, false}, Case{0, 1, true}, Case{2, 4, true},
                        Case{1, 1, true}}) {
    SCOPED_TRACE(std::to_string(c.i) + ", " + std::to_string(c.j));
    Graph g;
    const std::string kernel = PlannedInt8Kernel(
        &g, "llvm -mtriple=aarch64-linux-gnu", "conv2d_int8_neon", [&](int64_t o, int64_t i) {
          return o == 5 && (i == c.i || i == c.j) ? -128 : static_cast<int>(o * 8 + i) % 9 - 4;
        });
    EXPECT_EQ(kernel == "conv2d_int8_neon", c.taken);
  }
}

TEST(PackConvWeights, WideningDotChannelsFormPacksHalves) {
  struct Case {
    const char* target;
    const char* kernel;
    bool halves;
  };
  for (const Case& c : {Case{"llvm -mtriple=aarch64-linux-gnu", "conv2d_int8_neon", true},
                        Case{"llvm -mtriple=armv7a-linux-gnueabihf", "conv2d_int8_neon32", true},
                        Case{"llvm -mtriple=aarch64-linux-gnu", "conv2d_int8_pixels_neon", false},
                        Case{"llvm -mtriple=aarch64-linux-gnu -mattr=+dotprod",
                             "conv2d_int8_neon_dotprod", false}}) {
    SCOPED_TRACE(c.kernel);
    Graph g;
    auto weight = [](int64_t o, int64_t i) { return static_cast<int>(o * 8 + i) - 32; };
    ASSERT_EQ(PlannedInt8Kernel(&g, c.target, c.kernel, weight), c.kernel);
    EXPECT_EQ(KernelPlan::Of(g.nodes()[0]).int8_weight_halves, c.halves);
    PackConvWeights(&g);
    const Node& conv = g.nodes()[0];
    EXPECT_EQ(conv.GetInt(kPackedInt8HalvesAttr, 0), c.halves ? 1 : 0);
    const int64_t block = conv.GetInt(kPackedInt8WeightAttr, 0);
    const Value& packed = g.value(conv.inputs[1]);
    // Weight (o, i) of the 1x1 conv within its vector of `block` channels x 4 input channels.
    for (int64_t o = 0; o < 8; ++o) {
      for (int64_t i = 0; i < 8; ++i) {
        const int64_t lane = o % block, byte = i % 4;
        const int64_t in_vector =
            c.halves ? (byte / 2 * block + lane) * 2 + byte % 2 : lane * 4 + byte;
        const int64_t at = ((o / block) * 2 + i / 4) * block * 4 + in_vector;
        EXPECT_EQ(packed.constant->GetAsDouble(at), weight(o, i)) << o << " " << i;
      }
    }
  }
}

// Of the two int8 conv forms the strategy picks the one that costs less (Conv2dInt8Pays): output
// pixels in the lanes for a 3-channel stem (few dot steps per output, where the channels form's
// strided epilogue weighs most) and 1x1 convs whose planes fill the vectors; output channels for
// deep 3x3 convs on planes the pixel tiles fill to 7/8 and 1x1 convs of 960 channels at 7x7.
TEST(PlanKernels, Int8ConvFormByCost) {
  struct Case {
    int64_t c, oc, hw, k, stride;
    const char* kernel;
  };
  for (const Case& c : {Case{3, 64, 224, 7, 2, "conv2d_int8_pixels_avx512vnni"},
                        Case{3, 32, 224, 3, 2, "conv2d_int8_pixels_avx512vnni"},
                        Case{16, 96, 112, 1, 1, "conv2d_int8_pixels_avx512vnni"},
                        Case{64, 64, 56, 3, 1, "conv2d_int8_avx512vnni"},
                        Case{512, 512, 7, 3, 1, "conv2d_int8_avx512vnni"},
                        Case{960, 320, 7, 1, 1, "conv2d_int8_avx512vnni"}}) {
    SCOPED_TRACE(std::to_string(c.c) + " channels " + std::to_string(c.k) + "x" +
                 std::to_string(c.k) + " at " + std::to_string(c.hw));
    Graph g;
    const int x = g.AddValue("x", TensorType{{1, c.c, c.hw, c.hw}, kUInt8});
    g.inputs().push_back(x);
    auto w = std::make_shared<HostTensor>(TensorType{{c.oc, c.c, c.k, c.k}, kInt8});
    for (int64_t i = 0; i < w->NumElements(); ++i) w->SetFromDouble(i, i % 7 - 3);
    const int64_t pad = c.k / 2;
    const AttrMap attrs{{"kernel_shape", std::vector<int64_t>{c.k, c.k}},
                        {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                        {"strides", std::vector<int64_t>{c.stride, c.stride}},
                        {kDataZeroPointAttr, int64_t{7}}};
    g.outputs().push_back(Add(g, "Conv", {x, g.AddConstant("w", w)}, attrs));
    PlanKernels(
        &g, schedule::TableStrategy(Target::Parse("llvm -mcpu=cascadelake"), StrategyOptions{}));
    EXPECT_EQ(KernelPlan::Of(g.nodes()[0]).kernel, c.kernel);
  }
}

TEST(FuseOps, ConvEpilogueBiasReluResidual) {
  Graph g;
  int x = g.AddValue("x", F32({1, 2, 4, 4}));
  g.inputs().push_back(x);
  int w = g.AddConstant("w", Floats({2, 2, 1, 1}, {1, 0, 0, 1}));
  int bias = g.AddConstant("bias", Floats({2, 1, 1}, {1, 2}));
  int c = Add(g, "Conv", {x, w}, Conv1x1());
  int b = Add(g, "Add", {c, bias});
  int r = Add(g, "Relu", {b});
  int res = Add(g, "Add", {r, x});
  int sm = Add(g, "Softmax", {res}, {{"axis", int64_t{3}}});
  g.outputs().push_back(sm);
  std::vector<FusedGroup> groups = FuseOps(&g, 3);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].nodes.size(), 4u);
  EXPECT_EQ(groups[0].func_name, "fused_conv_add_relu_add");
  EXPECT_EQ(groups[0].inputs, (std::vector<int>{x, w, bias}));
  EXPECT_EQ(groups[0].outputs, (std::vector<int>{res}));
  EXPECT_EQ(groups[0].anchor, 0);
  EXPECT_EQ(groups[1].nodes.size(), 1u);  // Softmax is opaque
  EXPECT_EQ(groups[1].inputs, (std::vector<int>{res}));

  EXPECT_EQ(FuseOps(&g, 0).size(), 5u);  // opt-level 0: one kernel per node
}

// A squeeze-and-excitation block: the conv on the pooled 1 x 1 plane and its activation are one
// kernel, the per-channel scale of the feature map another; in the conv's group the product
// would compute the conv once per output element (MobileNetV3's SE blocks: 1.6 of 5.4 ms).
TEST(FuseOps, ConvResultSpreadOverALargerOutputEndsTheGroup) {
  Graph g;
  int x = g.AddValue("x", F32({1, 2, 7, 7}));
  g.inputs().push_back(x);
  int pooled = Add(g, "GlobalAveragePool", {x});
  int c =
      Add(g, "Conv", {pooled, g.AddConstant("w", Floats({2, 2, 1, 1}, {1, 0, 0, 1}))}, Conv1x1());
  int scale = Add(g, "HardSigmoid", {c}, {{"alpha", 1.0f / 6}, {"beta", 0.5f}});
  int y = Add(g, "Mul", {x, scale});
  g.outputs().push_back(y);
  std::vector<FusedGroup> groups = FuseOps(&g, 3);
  ASSERT_EQ(groups.size(), 3u);
  EXPECT_EQ(groups[1].func_name, "fused_conv_hardsigmoid");
  EXPECT_EQ(groups[1].outputs, (std::vector<int>{scale}));
  EXPECT_EQ(groups[2].func_name, "fused_mul");
  EXPECT_EQ(groups[2].inputs, (std::vector<int>{x, scale}));
}

// Hard-swish on a conv's result, x * HardSigmoid(x): x has two readers, so the single-reader rule
// stops at the conv; the elementwise group holding both readers joins it (one kernel). When x
// has a reader outside that group too, it stays a kernel of its own.
TEST(FuseOps, ElementwiseDiamondOnAConvJoinsIt) {
  for (bool read_elsewhere : {false, true}) {
    SCOPED_TRACE(read_elsewhere ? "conv result read elsewhere too" : "diamond only");
    Graph g;
    int x = g.AddValue("x", F32({1, 2, 4, 4}));
    g.inputs().push_back(x);
    int c = Add(g, "Conv", {x, g.AddConstant("w", Floats({2, 2, 1, 1}, {1, 0, 0, 1}))}, Conv1x1());
    int hs = Add(g, "HardSigmoid", {c}, {{"alpha", 1.0f / 6}, {"beta", 0.5f}});
    int y = Add(g, "Mul", {c, hs});
    g.outputs().push_back(y);
    if (read_elsewhere) g.outputs().push_back(Add(g, "Neg", {c}));
    std::vector<FusedGroup> groups = FuseOps(&g, 3);
    if (read_elsewhere) {
      ASSERT_EQ(groups.size(), 3u);  // {Conv}, {HardSigmoid, Mul}, {Neg}
      EXPECT_EQ(groups[0].func_name, "fused_conv");
      continue;
    }
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].func_name, "fused_conv_hardsigmoid_mul");
    EXPECT_EQ(groups[0].anchor, 0);
    EXPECT_EQ(groups[0].outputs, (std::vector<int>{y}));
  }
}

// A quantized residual: Add(dequantized conv result, dequantized other branch). The other
// branch's elementwise chain joins the conv's group after the conv's own nodes, so one kernel
// reads the other branch's bytes in its epilogue; an injective producer (Transpose) keeps the
// first-input rule and its own group.
TEST(FuseOps, ElementwiseChainsJoinTheAnchorTheirResultMeets) {
  for (bool injective_branch : {false, true}) {
    SCOPED_TRACE(injective_branch ? "injective branch" : "elementwise branch");
    Graph g;
    int x = g.AddValue("x", F32({1, 2, 4, 4}));
    int skip = g.AddValue("skip", F32({1, 2, 4, 4}));
    g.inputs() = {x, skip};
    int scale = g.AddConstant("scale", Floats({1}, {0.5f}));
    int branch = injective_branch
                     ? Add(g, "Transpose", {skip}, {{"perm", std::vector<int64_t>{0, 1, 3, 2}}})
                     : Add(g, "Mul", {Add(g, "Exp", {skip}), scale});
    int c = Add(g, "Conv", {x, g.AddConstant("w", Floats({2, 2, 1, 1}, {1, 0, 0, 1}))}, Conv1x1());
    int y = Add(g, "Relu", {Add(g, "Add", {branch, c})});
    g.outputs().push_back(y);
    std::vector<FusedGroup> groups = FuseOps(&g, 3);
    if (injective_branch) {
      ASSERT_EQ(groups.size(), 2u);  // {Conv}, {Transpose, Add, Relu}
      EXPECT_EQ(groups[1].nodes[0]->op, "Transpose");
      continue;
    }
    ASSERT_EQ(groups.size(), 1u);
    std::vector<std::string> ops;
    for (const Node* n : groups[0].nodes) ops.push_back(n->op);
    EXPECT_EQ(ops, (std::vector<std::string>{"Conv", "Exp", "Mul", "Add", "Relu"}));
    EXPECT_EQ(groups[0].anchor, 0);
    EXPECT_EQ(groups[0].outputs, (std::vector<int>{y}));
  }
}

TEST(FuseOps, ValueReadTwiceEndsTheGroup) {
  Graph g;
  int x = g.AddValue("x", F32({8}));
  g.inputs().push_back(x);
  int e = Add(g, "Exp", {x});
  int a = Add(g, "Relu", {e});
  int b = Add(g, "Neg", {e});
  int y = Add(g, "Add", {a, b});
  g.outputs().push_back(y);
  std::vector<FusedGroup> groups = FuseOps(&g, 3);
  // {Exp}, then {Relu, Neg, Add}: the two chains from Exp's value meet in the Add.
  ASSERT_EQ(groups.size(), 2u);
  std::vector<bool> defined(g.values().size(), false);
  defined[x] = true;
  for (const FusedGroup& fg : groups) {
    for (int in : fg.inputs) EXPECT_TRUE(defined[in]) << fg.func_name;
    for (int out : fg.outputs) defined[out] = true;
  }
  EXPECT_EQ(groups[1].nodes.size(), 3u);
  EXPECT_EQ(groups[1].outputs, (std::vector<int>{y}));
}

// An LSTM cell's gates: gathers of one gates value, each through its activation, meeting in the
// state's products. The chains share one kernel with the node they meet in (they took one
// kernel per gate before, eight kernels a step where five do).
TEST(FuseOps, InjectiveChainsMeetingInANodeShareItsKernel) {
  Graph g;
  int gates = g.AddValue("gates", F32({1, 96}));
  int c_prev = g.AddValue("c_prev", F32({1, 32}));
  g.inputs() = {gates, c_prev};
  auto gate = [&](int64_t k, const char* act) {
    std::vector<int64_t> at(32);
    for (int64_t i = 0; i < 32; ++i) at[static_cast<size_t>(i)] = k * 32 + i;
    int idx = g.AddConstant("at" + std::to_string(k), MakeInt64Tensor(at));
    return Add(g, act, {Add(g, "Gather", {gates, idx}, {{"axis", int64_t{1}}})});
  };
  int f = gate(0, "Sigmoid"), i = gate(1, "Sigmoid"), cc = gate(2, "Tanh");
  int c = Add(g, "Add", {Add(g, "Mul", {f, c_prev}), Add(g, "Mul", {i, cc})});
  g.outputs().push_back(c);
  std::vector<FusedGroup> groups = FuseOps(&g, 3);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups[0].nodes.size(), 9u);  // three gathers and activations, two Muls, the Add
  EXPECT_EQ(groups[0].outputs, (std::vector<int>{c}));
}

TEST(FuseOps, OutputThatIsAnInputOrConstantGetsACopyKernel) {
  Graph g;
  int x = g.AddValue("x", F32({2}));
  g.inputs().push_back(x);
  int c = g.AddConstant("c", Floats({2}, {1, 2}));
  g.outputs() = {x, c};
  std::vector<FusedGroup> groups = FuseOps(&g, 3);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].nodes[0]->op, "Identity");
  EXPECT_EQ(groups[0].inputs, (std::vector<int>{x}));
  EXPECT_EQ(groups[1].inputs, (std::vector<int>{c}));
  EXPECT_NE(g.outputs()[0], x);
}

// Scores [2, rows, columns] = MatMul(q, kt) plus a constant mask(row, column), a softmax over
// `softmax_axis`, times v: attention as exporters write it; `scores_also_output` makes the masked
// scores a graph output too.
Graph MaskedAttention(int64_t rows, int64_t columns,
                      const std::function<float(int64_t, int64_t)>& mask, int64_t softmax_axis = -1,
                      bool scores_also_output = false) {
  Graph g;
  const int q = g.AddValue("q", F32({2, rows, 4})), kt = g.AddValue("kt", F32({2, 4, columns}));
  const int v = g.AddValue("v", F32({2, columns, 3}));
  g.inputs() = {q, kt, v};
  std::vector<float> m(static_cast<size_t>(rows * columns));
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < columns; ++j) m[static_cast<size_t>(i * columns + j)] = mask(i, j);
  }
  const int scores = Add(g, "MatMul", {q, kt});
  const int masked = Add(g, "Add", {scores, g.AddConstant("mask", Floats({rows, columns}, m))});
  const int probs = Add(g, "Softmax", {masked}, {{"axis", softmax_axis}});
  g.outputs().push_back(Add(g, "MatMul", {probs, v}));
  if (scores_also_output) g.outputs().push_back(masked);
  return g;
}

// The same attention masked as PyTorch's masked_fill writes it: Where(hidden, fill, scores), or
// with `keep_first` Where(kept, scores, fill); `hidden(row, column)` as a constant condition
// [1, rows, columns], `fill` a scalar.
Graph FilledAttention(int64_t rows, int64_t columns,
                      const std::function<bool(int64_t, int64_t)>& hidden, float fill,
                      bool keep_first) {
  Graph g;
  const int q = g.AddValue("q", F32({2, rows, 4})), kt = g.AddValue("kt", F32({2, 4, columns}));
  const int v = g.AddValue("v", F32({2, columns, 3}));
  g.inputs() = {q, kt, v};
  auto cond = std::make_shared<HostTensor>(TensorType{{1, rows, columns}, kBool});
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < columns; ++j)
      cond->SetFromInt(i * columns + j, hidden(i, j) != keep_first);
  }
  const int scores = Add(g, "MatMul", {q, kt});
  const int c = g.AddConstant("cond", cond), f = g.AddConstant("fill", Floats({}, {fill}));
  const int masked =
      Add(g, "Where", keep_first ? std::vector<int>{c, scores, f} : std::vector<int>{c, f, scores});
  const int probs = Add(g, "Softmax", {masked}, {{"axis", int64_t{-1}}});
  g.outputs().push_back(Add(g, "MatMul", {probs, v}));
  return g;
}

std::vector<int64_t> CausalFrom(const Graph& g) {
  std::vector<int64_t> c;
  for (const Node& n : g.nodes()) c.push_back(n.GetInt(kCausalFromAttr, 0));
  return c;
}

TEST(MarkCausalMasks, MarksTheMaskTheSoftmaxAndTheProductAfterIt) {
  const float inf = std::numeric_limits<float>::infinity();
  // Five new rows after two cached keys: row m keeps keys 0 .. m + 2.
  Graph past = MaskedAttention(5, 7, [&](int64_t i, int64_t j) { return j > i + 2 ? -inf : 0.f; });
  MarkCausalMasks(&past);
  EXPECT_EQ(CausalFrom(past), (std::vector<int64_t>{0, 3, 3, 3}));
  // float32's lowest, as exporters write a causal mask, and the mask's rows ending at the last key.
  const float lowest = std::numeric_limits<float>::lowest();
  Graph tall = MaskedAttention(6, 4, [&](int64_t i, int64_t j) { return j > i ? lowest : 0.5f; });
  MarkCausalMasks(&tall);
  EXPECT_EQ(CausalFrom(tall), (std::vector<int64_t>{0, 1, 1, 1}));
  // Masked keys before a row's end (padding) are the Add's to mask as ever: only the end counts.
  Graph holes = MaskedAttention(
      4, 4, [&](int64_t i, int64_t j) { return j > i || (i == 3 && j == 1) ? -inf : 0.f; });
  MarkCausalMasks(&holes);
  EXPECT_EQ(CausalFrom(holes), (std::vector<int64_t>{0, 1, 1, 1}));
}

TEST(MarkCausalMasks, TakesAWhereBetweenTheScoresAndAMaskedConstant) {
  const float inf = std::numeric_limits<float>::infinity();
  auto future = [](int64_t i, int64_t j) { return j > i; };
  const std::vector<int64_t> marked{0, 1, 1, 1}, none{0, 0, 0, 0};
  for (bool keep_first : {false, true}) {
    SCOPED_TRACE(keep_first ? "Where(kept, scores, fill)" : "Where(hidden, fill, scores)");
    Graph filled = FilledAttention(5, 5, future, -inf, keep_first);
    MarkCausalMasks(&filled);
    EXPECT_EQ(CausalFrom(filled), marked);
    Graph lowest = FilledAttention(5, 5, future, std::numeric_limits<float>::lowest(), keep_first);
    MarkCausalMasks(&lowest);
    EXPECT_EQ(CausalFrom(lowest), marked);
    Graph small = FilledAttention(5, 5, future, -1e4f, keep_first);  // exp() above 0 for some
    MarkCausalMasks(&small);
    EXPECT_EQ(CausalFrom(small), none);
  }
}

TEST(MarkCausalMasks, LeavesOtherMasksAndUsesAlone) {
  const float inf = std::numeric_limits<float>::infinity();
  auto causal = [&](int64_t i, int64_t j) { return j > i ? -inf : 0.f; };
  const std::vector<int64_t> none{0, 0, 0, 0};
  std::vector<Graph> graphs;
  // -1e9 leaves exp() above 0 for scores that large: not a mask this pass trusts.
  graphs.push_back(MaskedAttention(4, 4, [](int64_t i, int64_t j) { return j > i ? -1e9f : 0.f; }));
  // A row that keeps no key (softmax of all -inf is NaN), and a row off the diagonal.
  graphs.push_back(
      MaskedAttention(4, 4, [&](int64_t i, int64_t j) { return j >= i ? -inf : 0.f; }));
  graphs.push_back(MaskedAttention(
      4, 4, [&](int64_t i, int64_t j) { return j > (i == 2 ? 3 : i) ? -inf : 0.f; }));
  // Nothing masked; a softmax over another axis; scores that are also a graph output.
  graphs.push_back(MaskedAttention(4, 4, [](int64_t, int64_t) { return 0.f; }));
  graphs.push_back(MaskedAttention(4, 4, causal, 1));
  graphs.push_back(MaskedAttention(4, 4, causal, -1, true));
  for (size_t i = 0; i < graphs.size(); ++i) {
    SCOPED_TRACE("graph " + std::to_string(i));
    MarkCausalMasks(&graphs[i]);
    EXPECT_EQ(CausalFrom(graphs[i]), none);
  }
}

}  // namespace
}  // namespace compiler
}  // namespace ember
