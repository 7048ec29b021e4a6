// te expression folding, compute construction, and the default schedule's lowering decisions.
#include <ember/compiler/lower.h>
#include <ember/compiler/te/expr.h>
#include <ember/compiler/te/tensor.h>
#include <gtest/gtest.h>

namespace ember::compiler {
namespace {

using te::Expr;
using te::Tensor;

TEST(TeExpr, FoldsIntegerLiteralsAndIdentities) {
  int64_t v = 0;
  EXPECT_TRUE(te::GetConstInt(Expr(3) * 4 + 2, &v));
  EXPECT_EQ(v, 14);
  EXPECT_TRUE(te::GetConstInt(te::FloorDiv(Expr(-7), Expr(2)), &v));
  EXPECT_EQ(v, -4);
  EXPECT_TRUE(te::GetConstInt(te::FloorMod(Expr(-7), Expr(2)), &v));
  EXPECT_EQ(v, 1);
  Expr x = te::MakeVar("x");
  EXPECT_TRUE((x * 1 + 0).same_as(x));
  EXPECT_TRUE(te::GetConstInt(x * 0, &v));
  EXPECT_EQ(v, 0);
}

TEST(TeExpr, LiteralsAdoptOperandTypeAndMismatchIsAnError) {
  Tensor a = te::Placeholder({4}, te::Float(32), "a");
  Expr e = a({Expr(1)}) * 2.0;
  EXPECT_TRUE(te::IsFloat(e.dtype()) && e.dtype().bits == 32);
  Tensor b = te::Placeholder({4}, te::Int(32), "b");
  EXPECT_THROW(a({Expr(0)}) + b({Expr(0)}), std::runtime_error);
  EXPECT_TRUE(te::IsBool((a({Expr(0)}) < 1.0).dtype()));
}

TEST(TeTensor, ComputeRecordsInputsAndIndexCountIsChecked) {
  Tensor a = te::Placeholder({2, 3}, te::Float(32), "a");
  Tensor b = te::Compute(
      {3, 2},
      [&](const std::vector<Expr>& i) {
        return a({i[1], i[0]});
      },
      "b");
  ASSERT_EQ(b->inputs.size(), 1u);
  EXPECT_EQ(b->inputs[0].get(), a.get());
  EXPECT_TRUE(te::IsFloat(b.dtype()));
  EXPECT_THROW(a({Expr(0)}), std::runtime_error);
}

lower::ArgInfo Arg(const Tensor& t) {
  return lower::ArgInfo{t->name, t.shape(), t.dtype(), nullptr};
}

TEST(Lower, InlinesElementwiseChainsIntoOneNest) {
  Tensor a = te::Placeholder({8, 16}, te::Float(32), "a");
  Tensor b = te::Compute(
      {8, 16}, [&](const std::vector<Expr>& i) { return a(i) + 1.0; }, "b");
  Tensor c = te::Compute(
      {8, 16}, [&](const std::vector<Expr>& i) { return te::Max(b(i), 0.0); }, "c");
  lower::ScheduleOptions opts;
  lower::LoweredFunc f = lower::LowerTensors("f", {a}, {c}, {Arg(a), Arg(c)}, opts);
  EXPECT_TRUE(f.workspaces.empty());
  std::string text = lower::ToText(f);
  // one store into the output, inner loop marked for vectorisation, no parallel loop (small)
  EXPECT_NE(text.find("vectorized for"), std::string::npos) << text;
  EXPECT_EQ(text.find("parallel"), std::string::npos) << text;
}

TEST(Lower, MaterialisesReductionsIntoWorkspaceAndParallelisesBigNests) {
  Tensor a = te::Placeholder({256, 256}, te::Float(32), "a");
  te::IterVar k = te::ReduceAxis(256);
  Tensor s = te::Compute(
      {256, 256},
      [&](const std::vector<Expr>& i) {
        return te::Sum(a({i[0], k.var}) * a({k.var, i[1]}), {k});
      },
      "mm");
  Tensor r = te::Compute(
      {256, 256}, [&](const std::vector<Expr>& i) { return te::Max(s(i), 0.0); }, "relu");
  lower::ScheduleOptions opts;
  lower::LoweredFunc f = lower::LowerTensors("g", {a}, {r}, {Arg(a), Arg(r)}, opts);
  ASSERT_EQ(f.workspaces.size(), 1u);
  EXPECT_EQ(f.workspaces[0]->size, 256 * 256);
  std::string text = lower::ToText(f);
  EXPECT_NE(text.find("parallel for"), std::string::npos) << text;
}

TEST(Lower, ReadingAnUnboundPlaceholderIsAnError) {
  Tensor a = te::Placeholder({4}, te::Float(32), "a");
  Tensor stray = te::Placeholder({4}, te::Float(32), "stray");
  Tensor c = te::Compute(
      {4}, [&](const std::vector<Expr>& i) { return a(i) + stray(i); }, "c");
  lower::ScheduleOptions opts;
  EXPECT_THROW(lower::LowerTensors("h", {a}, {c}, {Arg(a), Arg(c)}, opts), std::runtime_error);
}

// A register-blocked loop of one trip disappears; its variable must go with it (a MaxPool with
// one output column once reached codegen as "unbound variable ox").
TEST(Lower, ALoopOfOneTripLeavesNoUnboundVariable) {
  lower::Buffer out = lower::NewBuffer("out", te::Float(32), 8, lower::BufferScope::kArg, 0);
  Expr ox = te::MakeVar("ox"), t = te::MakeVar("t");
  lower::Stmt inner = lower::KeepScalarFor(
      ox, 1,
      lower::If(ox < 4, lower::Store(out, t * 2 + ox, te::Const(te::Float(32), 1.0)),
                lower::Prefetch(out, ox)));
  lower::Stmt loop = lower::For(t, 4, lower::ForKind::kSerial, inner);
  EXPECT_EQ(inner->kind, lower::StmtKind::kIf);
  const auto* branch = static_cast<const lower::IfNode*>(inner.get());
  const auto* store = static_cast<const lower::StoreNode*>(branch->then_case.get());
  const auto* prefetch = static_cast<const lower::PrefetchNode*>(branch->else_case.get());
  for (const Expr& e : {branch->cond, store->index, prefetch->index}) {
    EXPECT_FALSE(lower::Occurs(e, ox.get()));
  }
  EXPECT_TRUE(lower::Occurs(store->index, t.get()));
  // Longer loops keep their variable and stay scalar.
  lower::Stmt two =
      lower::KeepScalarFor(ox, 2, lower::Store(out, ox, te::Const(te::Float(32), 1.0)));
  ASSERT_EQ(two->kind, lower::StmtKind::kFor);
  EXPECT_TRUE(static_cast<const lower::ForNode*>(two.get())->keep_scalar);
}

// Substitution rebuilds loops with everything they carry, not only var, extent and kind.
TEST(Lower, SubstitutionKeepsALoopsSchedulingFlags) {
  lower::Buffer out = lower::NewBuffer("out", te::Float(32), 64, lower::BufferScope::kArg, 0);
  Expr i = te::MakeVar("i"), j = te::MakeVar("j");
  lower::Stmt loop =
      lower::KeepScalarFor(i, 8, lower::Store(out, i + j, te::Const(te::Float(32), 0.0)));
  lower::Stmt replaced = lower::SubstituteVar(loop, j, 3);
  ASSERT_EQ(replaced->kind, lower::StmtKind::kFor);
  const auto* f = static_cast<const lower::ForNode*>(replaced.get());
  EXPECT_TRUE(f->keep_scalar);
  EXPECT_EQ(f->extent, 8);
  const auto* store = static_cast<const lower::StoreNode*>(f->body.get());
  EXPECT_FALSE(lower::Occurs(store->index, j.get()));
}

}  // namespace
}  // namespace ember::compiler
