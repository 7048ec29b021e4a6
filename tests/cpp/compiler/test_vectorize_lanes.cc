// Vector values in the loop IR: te broadcasting rules and lower::VectorizeLanes, which turns a
// per-element expression into one over consecutive elements (the 1x1 kernel's epilogue).
#include <ember/compiler/lower.h>
#include <ember/compiler/te/expr.h>
#include <gtest/gtest.h>

#include <vector>

namespace ember::compiler {
namespace {

using te::Expr;

lower::Buffer FloatBuffer(const std::string& name, int64_t size) {
  return lower::NewBuffer(name, te::Float(32), size, lower::BufferScope::kArg);
}

// A register-tile accumulator of `lanes` floats.
lower::Buffer VectorLocal(const std::string& name, int lanes) {
  return lower::NewBuffer(name, te::WithLanes(te::Float(32), lanes), 1, lower::BufferScope::kLocal);
}

std::vector<const lower::BufferLoadNode*> Loads(const Expr& e) {
  std::vector<const lower::BufferLoadNode*> out;
  lower::VisitLoads(e, [&](const lower::BufferLoadNode* l) { out.push_back(l); });
  return out;
}

TEST(VectorTypes, ScalarOperandsOfVectorOperationsAreBroadcast) {
  lower::Buffer x = FloatBuffer("x", 64), s = FloatBuffer("s", 1);
  Expr v = lower::VectorLoad(x, Expr(8), 16);
  EXPECT_EQ(v.dtype().lanes, 16);
  Expr prod = v * lower::BufferLoad(s, Expr(0));
  EXPECT_EQ(prod.dtype().lanes, 16);
  Expr sum = prod + 1.0;  // a literal becomes a vector constant
  EXPECT_EQ(sum.dtype().lanes, 16);
  EXPECT_EQ((sum < 0.5).dtype().lanes, 16);
  EXPECT_EQ(te::Broadcast(lower::BufferLoad(s, Expr(0)), 1).dtype().lanes, 1);
  EXPECT_THROW(te::Broadcast(v, 4), std::runtime_error);
  // Vectors of different widths do not mix.
  EXPECT_THROW(v + lower::VectorLoad(x, Expr(0), 8), std::runtime_error);
}

TEST(VectorizeLanes, UnitStrideLoadsBecomeVectorLoadsOthersStayScalar) {
  lower::Buffer x = FloatBuffer("x", 256), bias = FloatBuffer("bias", 4);
  Expr q = te::MakeVar("q"), c = te::MakeVar("c");
  // relu(x[c * 64 + q + 3] + bias[c])
  Expr e = te::Max(lower::BufferLoad(x, c * 64 + q + 3) + lower::BufferLoad(bias, c), 0.0);
  Expr base = te::MakeVar("q0");
  Expr v = lower::VectorizeLanes(e, q.get(), base, 8);
  ASSERT_TRUE(v.defined());
  EXPECT_EQ(v.dtype().lanes, 8);
  std::vector<const lower::BufferLoadNode*> loads = Loads(v);
  ASSERT_EQ(loads.size(), 2u);
  for (const lower::BufferLoadNode* l : loads) {
    EXPECT_FALSE(lower::Occurs(l->index, q.get()));
    if (l->buffer == x) {
      EXPECT_EQ(l->dtype.lanes, 8);  // x[c * 64 + q0 + 3 ...]
      int64_t coeff = 0;
      ASSERT_TRUE(lower::LinearCoeff(l->index, base.get(), &coeff));
      EXPECT_EQ(coeff, 1);
    } else {
      EXPECT_EQ(l->dtype.lanes, 1);  // the bias, the same in every lane
    }
  }
}

TEST(VectorizeLanes, VectorLeavesAreKeptAndBroadcastLaneValuesAbsorbed) {
  lower::Buffer r = FloatBuffer("r", 64);
  lower::Buffer acc = VectorLocal("acc", 4);
  Expr q = te::MakeVar("q");
  // acc + r[q]: te broadcasts r[q] against the vector; lane k must read r[base + k].
  Expr e = lower::BufferLoad(acc, Expr(0)) + lower::BufferLoad(r, q);
  Expr v = lower::VectorizeLanes(e, q.get(), Expr(12), 4);
  ASSERT_TRUE(v.defined());
  for (const lower::BufferLoadNode* l : Loads(v)) {
    EXPECT_EQ(l->dtype.lanes, 4) << l->buffer->name;
  }
}

TEST(VectorizeLanes, RefusesOtherStridesLibmCallsAndTheVariableAsValue) {
  lower::Buffer x = FloatBuffer("x", 256);
  Expr q = te::MakeVar("q");
  EXPECT_FALSE(lower::VectorizeLanes(lower::BufferLoad(x, q * 2), q.get(), Expr(0), 4).defined());
  EXPECT_FALSE(
      lower::VectorizeLanes(lower::BufferLoad(x, te::FloorMod(q, Expr(7))), q.get(), Expr(0), 4)
          .defined());
  // sin is a libm call, which takes scalars only.
  auto sin = [](Expr a) { return te::Call(te::Intrinsic::kSin, {std::move(a)}); };
  EXPECT_FALSE(lower::VectorizeLanes(sin(lower::BufferLoad(x, q)), q.get(), Expr(0), 4).defined());
  EXPECT_FALSE(lower::VectorizeLanes(te::Cast(te::Float(32), q), q.get(), Expr(0), 4).defined());
  // A libm intrinsic on a vector accumulator, however deep, and the var as a value.
  lower::Buffer acc = VectorLocal("acc", 4);
  Expr deep = sin(lower::BufferLoad(acc, Expr(0))) * 2.0 + lower::BufferLoad(x, q);
  EXPECT_FALSE(lower::VectorizeLanes(deep, q.get(), Expr(0), 4).defined());
  EXPECT_FALSE(lower::VectorizeLanes(lower::BufferLoad(x, q) + te::Cast(te::Float(32), q), q.get(),
                                     Expr(0), 4)
                   .defined());
  // An intrinsic on a value the same in every lane is kept.
  Expr kept = te::Exp(lower::BufferLoad(x, Expr(3))) + lower::BufferLoad(x, q);
  Expr v = lower::VectorizeLanes(kept, q.get(), Expr(0), 4);
  ASSERT_TRUE(v.defined());
  EXPECT_EQ(v.dtype().lanes, 4);
  // exp, sigmoid, tanh and erf are arithmetic in codegen, which takes vectors: a conv's Sigmoid,
  // Tanh or GELU epilogue stays in its blocked kernel.
  for (Expr f : {te::Tanh(lower::BufferLoad(acc, Expr(0))), te::Erf(lower::BufferLoad(x, q))}) {
    Expr vf = lower::VectorizeLanes(f * 2.0 + lower::BufferLoad(x, q), q.get(), Expr(0), 4);
    ASSERT_TRUE(vf.defined());
    EXPECT_EQ(vf.dtype().lanes, 4);
  }
  Expr e = lower::VectorizeLanes(te::Exp(lower::BufferLoad(x, q)), q.get(), Expr(0), 4);
  ASSERT_TRUE(e.defined());
  EXPECT_EQ(e.dtype().lanes, 4);
  Expr sig = te::Sigmoid(lower::BufferLoad(acc, Expr(0))) * 2.0 + lower::BufferLoad(x, q);
  Expr vs = lower::VectorizeLanes(sig, q.get(), Expr(0), 4);
  ASSERT_TRUE(vs.defined());
  EXPECT_EQ(vs.dtype().lanes, 4);
  // One lane: plain substitution.
  Expr one = lower::VectorizeLanes(lower::BufferLoad(x, q * 2), q.get(), Expr(5), 1);
  ASSERT_TRUE(one.defined());
  int64_t index = 0;
  ASSERT_TRUE(te::GetConstInt(one.as<lower::BufferLoadNode>()->index, &index));
  EXPECT_EQ(index, 10);
}

}  // namespace
}  // namespace ember::compiler
