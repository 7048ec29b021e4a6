// lower::UnitStrideVectorIndices (compiler/lower/vector_index.cc): a vectorised loop's
// (r + v) mod k and (r + v) / k become (r mod k) + v and r / k exactly where r never lets r + v
// cross a multiple of k, so the index is affine in v with coefficient 1 (one vector load); the
// rewrite leaves every other index a gather. A group whose default lowering indexes so (a transform
// from NCHW16c to NCHW4c through NCHW) computes the same values.
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/lower.h>
#include <ember/compiler/te/expr.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using te::Expr;

// The coefficient of v in the load index of `for v in [0, extent) vectorized: y[v] = x[index]`
// after the rewrite; -1 when it is not affine in v (a gather).
int64_t RewrittenCoeff(const Expr& v, int64_t extent, const Expr& index) {
  lower::Buffer x = lower::NewBuffer("x", te::Float(32), 1 << 20, lower::BufferScope::kArg);
  lower::Buffer y = lower::NewBuffer("y", te::Float(32), 1 << 20, lower::BufferScope::kArg);
  lower::Stmt loop = lower::For(v, extent, lower::ForKind::kVectorized,
                                lower::Store(y, v, lower::BufferLoad(x, index)));
  lower::Stmt out = lower::UnitStrideVectorIndices(loop);
  auto* f = static_cast<const lower::ForNode*>(out.get());
  auto* st = static_cast<const lower::StoreNode*>(f->body.get());
  int64_t coeff = -1;
  return lower::LinearCoeff(st->value.as<lower::BufferLoadNode>()->index, v.get(), &coeff) ? coeff
                                                                                           : -1;
}

TEST(VectorIndex, ALaneInsideABlockBecomesAUnitStride) {
  Expr i = te::MakeVar("i"), v = te::MakeVar("v");
  // Channel i * 4 + v of 16-channel blocks of 64-element planes.
  Expr c = i * 4 + v;
  Expr index = te::FloorDiv(c, Expr(16)) * 64 + te::FloorMod(c, Expr(16));
  EXPECT_EQ(RewrittenCoeff(v, 4, index), 1);
  // Truncating division of a non-negative channel, and a remainder inside another (24 channels
  // of 4 per phase in blocks of 16: a phase interleave's index).
  Expr p = te::MakeVar("p");
  Expr phase_c = p * 24 + te::Mod(i * 4 + v, Expr(24));
  Expr nested =
      te::Binary(te::BinaryOp::kDiv, phase_c, Expr(16)) * 64 + te::FloorMod(phase_c, Expr(16));
  EXPECT_EQ(RewrittenCoeff(v, 4, nested), 1);
}

TEST(VectorIndex, IndicesThatCrossABlockStayGathers) {
  Expr i = te::MakeVar("i"), v = te::MakeVar("v");
  // Steps of 2 let four lanes cross a multiple of 16.
  Expr half = te::FloorMod(i * 2 + v, Expr(16));
  EXPECT_EQ(RewrittenCoeff(v, 4, half), -1);
  // Eight lanes from multiples of 4.
  Expr narrow = te::FloorMod(i * 4 + v, Expr(16));
  EXPECT_EQ(RewrittenCoeff(v, 8, narrow), -1);
  // A truncating remainder of what may be negative is not a floor one.
  Expr signed_rest = te::Mod(i * 4 - 8 + v, Expr(16));
  EXPECT_EQ(RewrittenCoeff(v, 4, signed_rest), -1);
  EXPECT_EQ(RewrittenCoeff(v, 4, te::FloorMod(i * 4 - 8 + v, Expr(16))), 1);
  // v scaled: not a lane of a block.
  Expr scaled = te::FloorMod(i * 8 + v * 2, Expr(16));
  EXPECT_EQ(RewrittenCoeff(v, 4, scaled), -1);
}

// NCHW16c -> NCHW -> NCHW4c in one group (the default lowering: each 4-channel vector of the
// output is 4 consecutive channels of a 16-channel block): the same values as the layouts say.
TEST(VectorIndex, ABlockToBlockTransformComputesTheSameValues) {
  testing::ScopedEnv disable("EMBER_DISABLE_SCHEDULES", "1");
  testing::KernelGraph kg;
  const int64_t c = 32, h = 3, w = 5;
  int x = kg.Input("x", {1, c / 16, h, w, 16});
  AttrMap to_nchw{{kSrcLayoutAttr, std::string("NCHW16c")}, {kDstLayoutAttr, std::string("NCHW")}};
  AttrMap to_4c{{kSrcLayoutAttr, std::string("NCHW")}, {kDstLayoutAttr, std::string("NCHW4c")}};
  int y = kg.Add("LayoutTransform", {x}, {TensorType{{1, c, h, w}, kFloat32}}, to_nchw)[0];
  int z = kg.Add("LayoutTransform", {y}, {TensorType{{1, c / 4, h, w, 4}, kFloat32}}, to_4c)[0];
  std::string loops;
  std::unique_ptr<testing::Library> lib = testing::BuildKernelWithLoops(kg, z, &loops);
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  testing::HostArray in({1, c / 16, h, w, 16}, kFloat32), out({1, c / 4, h, w, 4}, kFloat32);
  in.FillRandom(9);
  ASSERT_EQ(testing::Call(f, {&in, &out}), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < h * w; ++p) {
      const float want = in.data<float>()[((ch / 16) * h * w + p) * 16 + ch % 16];
      const float got = out.data<float>()[((ch / 4) * h * w + p) * 4 + ch % 4];
      if (got != want && ++bad <= 5) ADD_FAILURE() << "channel " << ch << " pixel " << p;
    }
  EXPECT_EQ(bad, 0);
}

}  // namespace
}  // namespace ember::compiler
