#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/op_registry.h>
#include <gtest/gtest.h>

#include <cmath>

namespace ember {
namespace compiler {
namespace {

TEST(Graph, ValuesNodesAndUses) {
  Graph g;
  int x = g.AddValue("x", TensorType{{2, 3}, kFloat32});
  int c = g.AddConstant("c", MakeScalarTensor(kFloat32, 2.0));
  int y = g.AddValue("y", TensorType{{2, 3}, kFloat32});
  g.inputs().push_back(x);
  g.nodes().push_back(Node{"Add", "add0", {}, {x, c}, {y}});
  g.outputs().push_back(y);
  std::vector<int> uses = g.UseCounts();
  EXPECT_EQ(uses[x], 1);
  EXPECT_EQ(uses[c], 1);
  EXPECT_EQ(uses[y], 1);
  EXPECT_EQ(g.Producers()[y], 0);
  EXPECT_EQ(g.UniqueName("x"), "x_1");
  EXPECT_NE(g.ToText().find("%y : float32[2,3] = Add(%x, %c)"), std::string::npos);
  EXPECT_NE(g.ToDot().find("digraph"), std::string::npos);
}

TEST(Node, AttributeAccessorsNameNodeAndAttr) {
  Node n{"Conv", "conv1", {}, {}, {}};
  n.attrs["group"] = int64_t{2};
  n.attrs["pads"] = std::vector<int64_t>{1, 1, 1, 1};
  EXPECT_EQ(n.GetInt("group"), 2);
  EXPECT_EQ(n.GetInt("missing", 7), 7);
  EXPECT_EQ(n.GetInts("pads").size(), 4u);
  try {
    n.GetInts("group");
    FAIL() << "expected CompileError";
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("node 'conv1' (Conv): attribute 'group' must be ints"),
              std::string::npos);
  }
  EXPECT_THROW(n.GetString("auto_pad"), CompileError);
}

TEST(HostTensor, ConvertsBetweenDtypes) {
  HostTensor t(TensorType{{3}, kInt32});
  t.SetFromDouble(0, 2.7);
  t.SetFromInt(1, -4);
  EXPECT_EQ(t.GetAsInt(0), 2);
  EXPECT_EQ(t.GetAsDouble(1), -4.0);
  EXPECT_EQ(DTypeToString(kBool), "bool");
  EXPECT_TRUE(DTypeFromString("int64") == kInt64);
  EXPECT_THROW(DTypeFromString("complex7"), CompileError);
}

// float16 constants fold on the host (a converter's scaled weights, a bias cast to float16):
// read exactly, written rounded to the nearest half as a kernel stores them.
TEST(HostTensor, Float16ConstantsAreReadAndWrittenAsHalves) {
  HostTensor t(TensorType{{4}, kFloat16});
  t.SetFromDouble(0, 0.1);       // 0x2e66: 0.0999755859375
  t.SetFromDouble(1, -65504.0);  // the largest half
  t.SetFromDouble(2, 1e6);       // past it: infinity
  t.SetFromInt(3, 2049);         // a tie between 2048 and 2050: to even, 2048
  const auto* bits = reinterpret_cast<const uint16_t*>(t.data.data());
  EXPECT_EQ(bits[0], 0x2e66);
  EXPECT_EQ(bits[1], 0xfbff);
  EXPECT_EQ(bits[2], 0x7c00);
  EXPECT_EQ(t.GetAsDouble(0), 0.0999755859375);
  EXPECT_EQ(t.GetAsDouble(1), -65504.0);
  EXPECT_TRUE(std::isinf(t.GetAsDouble(2)));
  EXPECT_EQ(t.GetAsInt(3), 2048);
}

}  // namespace
}  // namespace compiler
}  // namespace ember
