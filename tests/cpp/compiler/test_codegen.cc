// Kernel library build for the host: compile small groups, call them via dlopen, compare with
// reference loops, and check the generated argument checks.
#include <ember/compiler/lower.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/threading.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::Library;

TEST(Codegen, AddReluBroadcast) {
  KernelGraph kg;
  int a = kg.Input("a", {2, 3, 4});
  int b = kg.Input("b", {3, 1});
  int s = kg.Add("Add", {a, b}, {TensorType{{2, 3, 4}, kFloat32}})[0];
  int y = kg.Add("Relu", {s}, {TensorType{{2, 3, 4}, kFloat32}})[0];
  Library lib({kg.Group("fused_add_relu", {y})});
  auto f = lib.Get("fused_add_relu");
  ASSERT_NE(f, nullptr);
  HostArray xa({2, 3, 4}, kFloat32), xb({3, 1}, kFloat32), out({2, 3, 4}, kFloat32);
  xa.FillRandom(1);
  xb.FillRandom(2);
  ASSERT_EQ(Call(f, {&xa, &xb, &out}), 0) << TVMGetLastError();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) {
        int idx = (i * 3 + j) * 4 + k;
        float ref = std::max(0.f, xa.data<float>()[idx] + xb.data<float>()[j]);
        EXPECT_FLOAT_EQ(out.data<float>()[idx], ref);
      }
  EXPECT_NE(lib.Symbol("__tvm_module_ctx"), nullptr);
}

// A reduction of a whole tensor to one value (DynamicQuantizeLinear's min and max of every
// activation) runs as parallel tasks over rows of vector accumulators, their partials combined
// last (the marker); a sum may round differently (another order), min and max may not. The fused
// Sub after it applies to the one result.
TEST(Codegen, WholeTensorReductionsRunAsParallelRows) {
  const std::vector<int64_t> shape{3, 40, 72};
  for (const char* op : {"ReduceMin", "ReduceMax", "ReduceSum"}) {
    SCOPED_TRACE(op);
    KernelGraph kg;
    int x = kg.Input("x", shape);
    int one = kg.Input("one", {});
    int r = kg.Add(op, {x}, {TensorType{{}, kFloat32}},
                   {{"axes", std::vector<int64_t>{0, 1, 2}}, {"keepdims", int64_t{0}}})[0];
    int y = kg.Add("Sub", {r, one}, {TensorType{{}, kFloat32}})[0];
    std::string loops;
    std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
    EXPECT_NE(loops.find("_parts_ws["), std::string::npos) << loops;
    auto f = lib->Get("conv");
    ASSERT_NE(f, nullptr);
    HostArray hx(shape, kFloat32), hone({}, kFloat32), out({}, kFloat32);
    hx.FillRandom(7, -3.f, 3.f);
    hone.data<float>()[0] = 1.f;
    ASSERT_EQ(Call(f, {&hx, &hone, &out}), 0) << TVMGetLastError();
    const float* v = hx.data<float>();
    double want = v[0];
    for (int64_t i = 1; i < hx.size(); ++i) {
      if (std::string(op) == "ReduceMin") want = std::min<double>(want, v[i]);
      if (std::string(op) == "ReduceMax") want = std::max<double>(want, v[i]);
      if (std::string(op) == "ReduceSum") want += v[i];
    }
    want -= 1.0;
    const float got = out.data<float>()[0];
    if (std::string(op) == "ReduceSum") {
      EXPECT_NEAR(got, want, 1e-3 * std::fabs(want) + 1e-2);
    } else {
      EXPECT_EQ(got, static_cast<float>(want));
    }
  }
}

// A Concat fused with what reads its inputs and what follows it: its select on the output axis
// splits the loop nest, one part per input storing only its own (no select left, whose other
// arm's loads would be clamped into gathers), on an outer axis and on the innermost one.
TEST(Codegen, FusedConcatSplitsTheNestPerInput) {
  for (int64_t axis : {1, 3}) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const std::vector<int64_t> widths{3, 5, 2};
    KernelGraph kg;
    std::vector<int> ins;
    std::vector<std::vector<int64_t>> shapes;
    for (size_t k = 0; k < widths.size(); ++k) {
      std::vector<int64_t> shape{2, 4, 6, 7};
      shape[axis] = widths[k];
      shapes.push_back(shape);
      int x = kg.Input("x" + std::to_string(k), shape);
      ins.push_back(kg.Add("Neg", {x}, {TensorType{shape, kFloat32}})[0]);
    }
    std::vector<int64_t> oshape{2, 4, 6, 7};
    oshape[axis] = 10;
    int cat = kg.Add("Concat", ins, {TensorType{oshape, kFloat32}}, {{"axis", axis}})[0];
    int y = kg.Add("Relu", {cat}, {TensorType{oshape, kFloat32}})[0];
    std::string loops;
    std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
    EXPECT_EQ(loops.find("select("), std::string::npos) << loops;
    auto f = lib->Get("conv");
    ASSERT_NE(f, nullptr);
    std::vector<std::unique_ptr<HostArray>> xs;
    std::vector<HostArray*> args;
    for (size_t k = 0; k < widths.size(); ++k) {
      xs.push_back(std::make_unique<HostArray>(shapes[k], kFloat32));
      xs.back()->FillRandom(static_cast<int>(30 + k));
      args.push_back(xs.back().get());
    }
    HostArray out(oshape, kFloat32);
    args.push_back(&out);
    ASSERT_EQ(Call(f, args), 0) << TVMGetLastError();
    int bad = 0;
    for (int64_t i = 0; i < out.size(); ++i) {
      std::vector<int64_t> at(4);
      for (int64_t d = 3, rest = i; d >= 0; --d) {
        at[d] = rest % oshape[d];
        rest /= oshape[d];
      }
      size_t k = 0;
      while (at[axis] >= widths[k]) at[axis] -= widths[k++];
      const std::vector<int64_t>& s = shapes[k];
      const int64_t src = ((at[0] * s[1] + at[1]) * s[2] + at[2]) * s[3] + at[3];
      const float want = std::max(0.f, -xs[k]->data<float>()[src]);
      if (out.data<float>()[i] != want && ++bad <= 5) {
        ADD_FAILURE() << "out[" << i << "] = " << out.data<float>()[i] << ", expected " << want;
      }
    }
    EXPECT_EQ(bad, 0);
  }
}

// A Reshape between runs of dims with equal counts: every output element reads the input element
// at the same flat position, for reshapes that add and drop unit dims, merge or split some dims
// and regroup all of them.
TEST(Codegen, ReshapeKeepsEveryElementsFlatPosition) {
  const std::vector<int64_t> in{2, 3, 4, 5};
  for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{6, 1, 20},
                                                                             {2, 60},
                                                                             {1, 120, 1},
                                                                             {120},
                                                                             {4, 30},
                                                                             {2, 3, 20, 1},
                                                                             {1, 2, 1, 3, 4, 5, 1},
                                                                             {2, 12, 5},
                                                                             {5, 4, 3, 2},
                                                                             {1, 1, 120}}) {
    SCOPED_TRACE(::testing::PrintToString(shape));
    KernelGraph kg;
    int x = kg.Input("x", in);
    int neg = kg.Add("Neg", {x}, {TensorType{in, kFloat32}})[0];
    int y = kg.Add("Reshape", {neg}, {TensorType{shape, kFloat32}})[0];
    std::string loops;
    std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
    auto f = lib->Get("conv");
    ASSERT_NE(f, nullptr);
    HostArray hx(in, kFloat32), out(shape, kFloat32);
    hx.FillRandom(3);
    ASSERT_EQ(Call(f, {&hx, &out}), 0) << TVMGetLastError();
    for (int64_t i = 0; i < out.size(); ++i) {
      ASSERT_EQ(out.data<float>()[i], -hx.data<float>()[i]) << "element " << i;
    }
  }
}

// A recurrence's outputs, [1, 4] per step, made [1, 1, 4] and concatenated into [S, 1, 4], then
// [S, 1, 1, 4] (an unrolled LSTM's Y): with the reshapes' unit dims passed through rather than
// divided out, the concat's select compares the step axis itself, so the nest splits per step
// (a select chain S deep at every element took an LSTM of 200 steps 250 us).
TEST(Codegen, ConcatBehindUnitDimReshapesSplitsPerInput) {
  constexpr int64_t kSteps = 6;
  KernelGraph kg;
  std::vector<int> parts;
  for (int64_t k = 0; k < kSteps; ++k) {
    int x = kg.Input("h" + std::to_string(k), {1, 4});
    parts.push_back(kg.Add("Reshape", {x}, {TensorType{{1, 1, 4}, kFloat32}})[0]);
  }
  int cat =
      kg.Add("Concat", parts, {TensorType{{kSteps, 1, 4}, kFloat32}}, {{"axis", int64_t{0}}})[0];
  int y = kg.Add("Reshape", {cat}, {TensorType{{kSteps, 1, 1, 4}, kFloat32}})[0];
  std::string loops;
  std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
  EXPECT_EQ(loops.find("select("), std::string::npos) << loops;
  EXPECT_EQ(loops.find(" / "), std::string::npos) << loops;
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  std::vector<std::unique_ptr<HostArray>> hs;
  std::vector<HostArray*> args;
  for (int64_t k = 0; k < kSteps; ++k) {
    hs.push_back(std::make_unique<HostArray>(std::vector<int64_t>{1, 4}, kFloat32));
    hs.back()->FillRandom(static_cast<int>(40 + k));
    args.push_back(hs.back().get());
  }
  HostArray out({kSteps, 1, 1, 4}, kFloat32);
  args.push_back(&out);
  ASSERT_EQ(Call(f, args), 0) << TVMGetLastError();
  for (int64_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(out.data<float>()[i], hs[i / 4]->data<float>()[i % 4]) << "element " << i;
  }
}

// A kernel's argument and workspace buffers carry scoped no-alias metadata, so LLVM vectorises
// loops whose loads are gathers (it has no run-time overlap test for those): a bilinear Resize of
// H and W in NCHW, each output column reading the input at a computed column.
TEST(Codegen, GatherLoopsVectoriseOverBuffersThatDoNotAlias) {
  KernelGraph kg;
  int x = kg.Input("x", {1, 4, 16, 16});
  const TensorType out{{1, 4, 32, 32}, kFloat32};
  int y = kg.Add("Resize", {x}, {out},
                 {{"mode", std::string("linear")},
                  {"coordinate_transformation_mode", std::string("half_pixel")},
                  {"nearest_mode", std::string("floor")},
                  {"cubic_coeff_a", -0.75},
                  {"exclude_outside", int64_t{0}},
                  {"extrapolation_value", 0.0},
                  {"scales", std::vector<double>{1, 1, 2, 2}},
                  {"__out_shape", out.shape}})[0];
  // Whether a gather pays is LLVM's cost model's call per CPU (not on AMD's Zen 3, say), so the
  // vectorisation is checked on one where it does; the values on the host.
  std::string ir;
  testing::BuildKernelWithDump(kg, y, "kernels.opt.ll", &ir,
                               Target::Parse("llvm -mcpu=skylake-avx512"));
  EXPECT_NE(ir.find("!alias.scope"), std::string::npos);
  EXPECT_NE(ir.find("llvm.masked.gather"), std::string::npos) << "the resize loop stayed scalar";
  std::unique_ptr<Library> lib = testing::BuildKernelWithDump(kg, y, "kernels.opt.ll", &ir);
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx({1, 4, 16, 16}, kFloat32), hy(out.shape, kFloat32);
  hx.FillRandom(5);
  ASSERT_EQ(Call(f, {&hx, &hy}), 0) << TVMGetLastError();
  // Half-pixel bilinear: output (i, j) samples (i + 0.5) / 2 - 0.5, clamped to the plane.
  auto at = [&](int64_t c, int64_t i, int64_t j) {
    return hx.data<float>()[(c * 16 + i) * 16 + j];
  };
  int bad = 0;
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t i = 0; i < 32; ++i)
      for (int64_t j = 0; j < 32; ++j) {
        const double yi = std::clamp((i + 0.5) / 2 - 0.5, 0.0, 15.0);
        const double xj = std::clamp((j + 0.5) / 2 - 0.5, 0.0, 15.0);
        const int64_t y0 = static_cast<int64_t>(yi), x0 = static_cast<int64_t>(xj);
        const int64_t y1 = std::min<int64_t>(y0 + 1, 15), x1 = std::min<int64_t>(x0 + 1, 15);
        const double wy = yi - y0, wx = xj - x0;
        const double want = (at(c, y0, x0) * (1 - wx) + at(c, y0, x1) * wx) * (1 - wy) +
                            (at(c, y1, x0) * (1 - wx) + at(c, y1, x1) * wx) * wy;
        const float got = hy.data<float>()[(c * 32 + i) * 32 + j];
        if (std::fabs(got - want) > 1e-5 && ++bad <= 5) {
          ADD_FAILURE() << "y[" << c << "," << i << "," << j << "] = " << got << ", expected "
                        << want;
        }
      }
  EXPECT_EQ(bad, 0);
}

// An elementwise chain on NCHW16c data (a HardSwish as exporters write it) runs one vector per
// pixel: its 16-lane loop is one <16 x float> step, not unrolled and then vectorised across
// pixels as gathers and scatters.
TEST(Codegen, BlockedElementwiseRunsOneVectorPerPixel) {
  const std::vector<int64_t> shape{1, 2, 20, 20, 16};
  const TensorType t{shape, kFloat32};
  KernelGraph kg;
  int x = kg.Input("x", shape);
  int three = kg.Input("three", {});
  int six = kg.Input("six", {});
  int shifted = kg.Add("Add", {x, three}, {t})[0];
  int clipped = kg.Add("Min", {kg.Add("Relu", {shifted}, {t})[0], six}, {t})[0];
  int product = kg.Add("Mul", {x, clipped}, {t})[0];
  int y = kg.Add("Div", {product, six}, {t})[0];
  std::string ir;
  std::unique_ptr<Library> lib = testing::BuildKernelWithDump(kg, y, "kernels.opt.ll", &ir);
  EXPECT_EQ(ir.find("llvm.masked.gather"), std::string::npos);
  EXPECT_EQ(ir.find("llvm.masked.scatter"), std::string::npos);
  EXPECT_NE(ir.find("<16 x float>"), std::string::npos);
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx(shape, kFloat32), h3({}, kFloat32), h6({}, kFloat32), hy(shape, kFloat32);
  hx.FillRandom(9, -5.f, 5.f);
  h3.data<float>()[0] = 3.f;
  h6.data<float>()[0] = 6.f;
  ASSERT_EQ(Call(f, {&hx, &h3, &h6, &hy}), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t i = 0; i < hx.size(); ++i) {
    const float v = hx.data<float>()[i];
    const float want = v * std::min(std::max(v + 3.f, 0.f), 6.f) / 6.f;
    if (std::fabs(hy.data<float>()[i] - want) > 1e-5f) ++bad;
  }
  EXPECT_EQ(bad, 0);
}

// `count` + 1 evenly spaced points of [lo, hi], then `extra`.
std::vector<float> Grid(float lo, float hi, int count, std::initializer_list<float> extra) {
  std::vector<float> xs;
  for (int i = 0; i <= count; ++i) xs.push_back(lo + (hi - lo) * static_cast<float>(i) / count);
  xs.insert(xs.end(), extra);
  return xs;
}

// A kernel of the one float32 op `op` over xs: its outputs, and its optimised IR in *ir.
std::vector<float> RunUnary(const char* op, const std::vector<float>& xs, std::string* ir) {
  const int64_t count = static_cast<int64_t>(xs.size());
  KernelGraph kg;
  int x = kg.Input("x", {count});
  int y = kg.Add(op, {x}, {TensorType{{count}, kFloat32}})[0];
  std::unique_ptr<Library> lib = testing::BuildKernelWithDump(kg, y, "kernels.opt.ll", ir);
  auto f = lib->Get("conv");
  EXPECT_NE(f, nullptr);
  if (f == nullptr) return {};
  HostArray hx({count}, kFloat32), hy({count}, kFloat32);
  std::copy(xs.begin(), xs.end(), hx.data<float>());
  EXPECT_EQ(Call(f, {&hx, &hy}), 0) << TVMGetLastError();
  return std::vector<float>(hy.data<float>(), hy.data<float>() + count);
}

// |got - exact| in units of the last place of exact rounded to float32.
double UlpError(float got, double exact) {
  const float want = std::fabs(static_cast<float>(exact));
  const double ulp = std::nextafter(want, std::numeric_limits<float>::infinity()) - want;
  return std::fabs(got - exact) / ulp;
}

// exp (and Sigmoid, which uses it) is plain float32 arithmetic, so loops holding it vectorise
// (llvm.exp lowers to a libm call per lane), its polynomial and reduction as fused multiply-adds:
// within 1 ulp of exp in double over float32's whole range, 0 and inf past it, denormals in
// between, NaN kept.
TEST(Codegen, ExpIsFusedArithmeticWithinOneUlp) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> xs = Grid(
      -110.f, 95.f, 200000, {nan, inf, -inf, 0.f, -0.f, 88.72f, 88.73f, -87.33f, -103.9f, -104.5f});
  std::string ir;
  const std::vector<float> ys = RunUnary("Exp", xs, &ir);
  ASSERT_EQ(ys.size(), xs.size());
  EXPECT_EQ(ir.find("expf"), std::string::npos);
  EXPECT_EQ(ir.find("llvm.exp."), std::string::npos);
  EXPECT_NE(ir.find("llvm.fmuladd."), std::string::npos);
  const int64_t count = static_cast<int64_t>(xs.size());
  double worst = 0;
  for (int64_t i = 0; i < count; ++i) {
    const double want = std::exp(static_cast<double>(xs[i]));
    const float got = ys[i];
    if (std::isnan(xs[i])) {
      EXPECT_TRUE(std::isnan(got));
    } else if (want > std::numeric_limits<float>::max()) {
      EXPECT_EQ(got, inf) << xs[i];
    } else if (want < std::numeric_limits<float>::min()) {  // denormal or 0
      EXPECT_NEAR(got, want, std::numeric_limits<float>::min() * 1e-6) << xs[i];
    } else {
      worst = std::max(worst, UlpError(got, want));
    }
  }
  EXPECT_LE(worst, 1.0);
}

// tanh is plain float32 arithmetic too (libm's tanhf was called per lane, and the loop stayed
// scalar): within 2 ulp of tanh in double, on both sides of the series' bound (0.625), -0 and
// denormals kept, +-1 at large |x| and at infinity, NaN kept.
TEST(Codegen, TanhIsArithmeticWithinTwoUlp) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float denormal = std::numeric_limits<float>::denorm_min() * 3;
  const std::vector<float> xs = Grid(-12.f, 12.f, 200000,
                                     {nan, inf, -inf, 0.f, -0.f, denormal, -denormal, 1e-20f,
                                      0.6249999f, 0.625f, -0.625f, 44.5f, -90.f, 3e38f});
  std::string ir;
  const std::vector<float> ys = RunUnary("Tanh", xs, &ir);
  ASSERT_EQ(ys.size(), xs.size());
  EXPECT_EQ(ir.find("tanhf"), std::string::npos);
  const int64_t count = static_cast<int64_t>(xs.size());
  double worst = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float got = ys[i];
    if (std::isnan(xs[i])) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    EXPECT_EQ(std::signbit(got), std::signbit(xs[i])) << xs[i];
    if (std::fabs(xs[i]) < std::numeric_limits<float>::min()) {
      EXPECT_EQ(got, xs[i]);  // tanh(x) = x to float32's precision
      continue;
    }
    worst = std::max(worst, UlpError(got, std::tanh(static_cast<double>(xs[i]))));
  }
  EXPECT_LE(worst, 2.0);
}

// erf (GELU's) is plain float32 arithmetic (libm's erff was called per lane): within 1.1 ulp of
// erf in double on both sides of the two pieces' bound (1), odd, -0 and denormals kept, +-1 from
// 3.92 on and at infinity, NaN kept.
TEST(Codegen, ErfIsArithmeticWithinOnePointOneUlp) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float denormal = std::numeric_limits<float>::denorm_min() * 3;
  const std::vector<float> xs =
      Grid(-6.f, 6.f, 200000,
           {nan, inf, -inf, 0.f, -0.f, denormal, -denormal, 1e-20f, 0.99999994f, 1.f, -1.f,
            1.0000001f, 3.92f, 3.95f, 3.96f, 1e30f, -3e38f});
  std::string ir;
  const std::vector<float> ys = RunUnary("Erf", xs, &ir);
  ASSERT_EQ(ys.size(), xs.size());
  EXPECT_EQ(ir.find("erff"), std::string::npos);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float got = ys[i];
    if (std::isnan(xs[i])) {
      EXPECT_TRUE(std::isnan(got));
      continue;
    }
    EXPECT_EQ(std::signbit(got), std::signbit(xs[i])) << xs[i];
    const double exact = std::erf(static_cast<double>(xs[i]));
    if (std::fabs(exact) >= 1 - 0x1p-25) {
      EXPECT_EQ(std::fabs(got), 1.f) << xs[i];  // erf rounds to +-1 there
      continue;
    }
    worst = std::max(worst, UlpError(got, exact));
  }
  EXPECT_LE(worst, 1.1);
}

// log (LogSoftmax's, a log-mel spectrogram's) is plain float32 arithmetic (llvm.log lowers to a
// libm call per lane): within 1 ulp of log in double over every binade of the positive floats,
// denormals included, 0 exactly at 1; -inf at +-0, +inf at +inf, NaN below 0 and at NaN.
TEST(Codegen, LogIsArithmeticWithinOneUlp) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> xs = {nan,
                           inf,
                           -inf,
                           0.f,
                           -0.f,
                           -1.f,
                           -1e-40f,
                           1.f,
                           0.70710677f,
                           0.7071068f,
                           1.4142135f,
                           std::numeric_limits<float>::max(),
                           std::numeric_limits<float>::denorm_min()};
  for (uint32_t bits = 1; bits < 0x7f800000u; bits += 10007) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    xs.push_back(x);
  }
  std::string ir;
  const std::vector<float> ys = RunUnary("Log", xs, &ir);
  ASSERT_EQ(ys.size(), xs.size());
  EXPECT_EQ(ir.find("logf"), std::string::npos);
  EXPECT_EQ(ir.find("llvm.log."), std::string::npos);
  double worst = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const float x = xs[i], got = ys[i];
    if (std::isnan(x) || x < 0) {
      EXPECT_TRUE(std::isnan(got)) << x;
    } else if (x == 0) {
      EXPECT_EQ(got, -inf);
    } else if (x == inf) {
      EXPECT_EQ(got, inf);
    } else if (x == 1) {
      EXPECT_EQ(got, 0.f);
    } else {
      worst = std::max(worst, UlpError(got, std::log(static_cast<double>(x))));
    }
  }
  EXPECT_LE(worst, 1.0);
}

// Pow by a constant 2 is a multiply in the loop IR (emberc passes the exponent as a parameter,
// so LLVM cannot fold pow itself: a libm call per element), equal to pow's result.
TEST(Codegen, PowByAConstantTwoIsASquare) {
  KernelGraph kg;
  int x = kg.Input("x", {64});
  auto two = std::make_shared<HostTensor>(TensorType{{}, kFloat32});
  two->Data<float>()[0] = 2.0f;
  int y = kg.Add("Pow", {x, kg.graph.AddConstant("two", two)}, {TensorType{{64}, kFloat32}})[0];
  std::string loops;
  std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
  EXPECT_EQ(loops.find("pow("), std::string::npos) << loops;
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx({64}, kFloat32), hy({64}, kFloat32);
  hx.FillRandom(9, -1e20f, 1e20f);
  hx.data<float>()[0] = std::numeric_limits<float>::quiet_NaN();
  hx.data<float>()[1] = -std::numeric_limits<float>::infinity();
  ASSERT_EQ(Call(f, {&hx, &hy}), 0) << TVMGetLastError();
  EXPECT_TRUE(std::isnan(hy.data<float>()[0]));
  for (int i = 1; i < 64; ++i) {
    EXPECT_EQ(hy.data<float>()[i], std::pow(hx.data<float>()[i], 2.0f)) << hx.data<float>()[i];
  }
}

// A requantization's clamp: its result only reaches an integer, so NaN and -0 cannot show and
// the bounds are minnum/maxnum (one vminps/vmaxps each on x86, not a compare and a blend).
TEST(Codegen, ClampBeforeAnIntegerCastIsMinMaxNum) {
  KernelGraph kg;
  const TensorType f{{64}, kFloat32};
  int x = kg.Input("x", f.shape);
  auto scalar = [&](const char* name, float v) {
    auto t = std::make_shared<HostTensor>(TensorType{{}, kFloat32});
    t->Data<float>()[0] = v;
    return kg.graph.AddConstant(name, t);
  };
  int lo = kg.Add("Max", {x, scalar("lo", 0.0f)}, {f})[0];
  int hi = kg.Add("Min", {lo, scalar("hi", 255.0f)}, {f})[0];
  int y = kg.Add("Cast", {hi}, {TensorType{{64}, kUInt8}},
                 {{"to", int64_t{2}}, {"__dtype", std::string("uint8")}})[0];
  std::string ir;
  std::unique_ptr<Library> lib = testing::BuildKernelWithDump(kg, y, "kernels.ll", &ir);
  auto called_without_nans = [&](const std::string& fn) {  // a call line with nnan nsz
    std::istringstream lines(ir);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("call") != std::string::npos && line.find("nnan nsz") != std::string::npos &&
          line.find(fn + "(") != std::string::npos) {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(called_without_nans("@llvm.maxnum.f32")) << ir;
  EXPECT_TRUE(called_without_nans("@llvm.minnum.f32")) << ir;
  auto fn = lib->Get("conv");
  ASSERT_NE(fn, nullptr);
  HostArray hx({64}, kFloat32), hy({64}, kUInt8);
  hx.FillRandom(5, -400.0f, 400.0f);
  hx.data<float>()[0] = -0.0f;
  hx.data<float>()[1] = 255.5f;
  hx.data<float>()[2] = 17.9f;
  ASSERT_EQ(Call(fn, {&hx, &hy}), 0) << TVMGetLastError();
  for (int i = 0; i < 64; ++i) {
    const float v = hx.data<float>()[i];
    EXPECT_EQ(hy.data<uint8_t>()[i], static_cast<uint8_t>(std::min(std::max(v, 0.0f), 255.0f)))
        << v;
  }
}

TEST(Codegen, Conv2DPaddedStridedWithBias) {
  KernelGraph kg;
  int x = kg.Input("x", {1, 3, 9, 9});
  int w = kg.Input("w", {4, 3, 3, 3});
  int b = kg.Input("b", {4});
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                {"strides", std::vector<int64_t>{2, 2}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                {"group", int64_t{1}}};
  int y = kg.Add("Conv", {x, w, b}, {TensorType{{1, 4, 5, 5}, kFloat32}}, attrs)[0];
  Library lib({kg.Group("conv", {y})});
  auto f = lib.Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx({1, 3, 9, 9}, kFloat32), hw({4, 3, 3, 3}, kFloat32), hb({4}, kFloat32),
      out({1, 4, 5, 5}, kFloat32);
  hx.FillRandom(3);
  hw.FillRandom(4);
  hb.FillRandom(5);
  ASSERT_EQ(Call(f, {&hx, &hw, &hb, &out}), 0) << TVMGetLastError();
  for (int oc = 0; oc < 4; ++oc)
    for (int oh = 0; oh < 5; ++oh)
      for (int ow = 0; ow < 5; ++ow) {
        double acc = hb.data<float>()[oc];
        for (int ic = 0; ic < 3; ++ic)
          for (int kh = 0; kh < 3; ++kh)
            for (int kw = 0; kw < 3; ++kw) {
              int ih = oh * 2 + kh - 1, iw = ow * 2 + kw - 1;
              if (ih < 0 || ih >= 9 || iw < 0 || iw >= 9) continue;
              acc += hx.data<float>()[(ic * 9 + ih) * 9 + iw] *
                     hw.data<float>()[((oc * 3 + ic) * 3 + kh) * 3 + kw];
            }
        EXPECT_NEAR(out.data<float>()[(oc * 5 + oh) * 5 + ow], acc, 1e-4);
      }
}

// A parallel loop's chunks cover its iterations exactly, whatever the extent and the thread
// count (chunk boundaries are c * extent / chunks: uneven extents split evenly).
TEST(Codegen, ParallelLoopsRunEveryIterationOnAnyThreadCount) {
  const int saved = runtime::threading::NumThreads();
  for (int64_t rows : {5, 9, 12, 30, 97}) {
    SCOPED_TRACE("rows " + std::to_string(rows));
    KernelGraph kg;
    int a = kg.Input("a", {rows, 8192});
    int y = kg.Add("Relu", {a}, {TensorType{{rows, 8192}, kFloat32}})[0];
    std::string loops;
    std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
    EXPECT_NE(loops.find("parallel for"), std::string::npos) << loops;
    auto f = lib->Get("conv");
    ASSERT_NE(f, nullptr);
    HostArray ha({rows, 8192}, kFloat32), out({rows, 8192}, kFloat32);
    ha.FillRandom(static_cast<uint64_t>(rows));
    for (int threads : {1, 2, 3, 4, 7}) {
      runtime::threading::SetNumThreads(threads);
      std::fill(out.data<float>(), out.data<float>() + out.size(),
                std::numeric_limits<float>::quiet_NaN());
      ASSERT_EQ(Call(f, {&ha, &out}), 0) << TVMGetLastError();
      int64_t wrong = 0;
      for (int64_t i = 0; i < out.size(); ++i) {
        wrong += out.data<float>()[i] != std::max(ha.data<float>()[i], 0.0f) ? 1 : 0;
      }
      EXPECT_EQ(wrong, 0) << threads << " threads";
    }
  }
  runtime::threading::SetNumThreads(saved);
}

TEST(Codegen, GemmTransBParallel) {
  // Big enough that the outer loop runs through TVMBackendParallelLaunch.
  const int M = 64, N = 96, K = 80;
  KernelGraph kg;
  int a = kg.Input("a", {M, K});
  int b = kg.Input("b", {N, K});
  int c = kg.Input("c", {N});
  AttrMap attrs{{"transB", int64_t{1}}, {"alpha", 0.5}, {"beta", 2.0}};
  int y = kg.Add("Gemm", {a, b, c}, {TensorType{{M, N}, kFloat32}}, attrs)[0];
  Library lib({kg.Group("gemm", {y})});
  auto f = lib.Get("gemm");
  ASSERT_NE(f, nullptr);
  HostArray ha({M, K}, kFloat32), hb({N, K}, kFloat32), hc({N}, kFloat32), out({M, N}, kFloat32);
  ha.FillRandom(6);
  hb.FillRandom(7);
  hc.FillRandom(8);
  ASSERT_EQ(Call(f, {&ha, &hb, &hc, &out}), 0) << TVMGetLastError();
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double acc = 0;
      for (int k = 0; k < K; ++k) acc += ha.data<float>()[i * K + k] * hb.data<float>()[j * K + k];
      double ref = 0.5 * acc + 2.0 * hc.data<float>()[j];
      EXPECT_NEAR(out.data<float>()[i * N + j], ref, 1e-3);
    }
}

TEST(Codegen, ArgumentChecksReportExpectedAndGot) {
  KernelGraph kg;
  int a = kg.Input("a", {2, 3});
  int y = kg.Add("Relu", {a}, {TensorType{{2, 3}, kFloat32}})[0];
  Library lib({kg.Group("relu_fn", {y})});
  auto f = lib.Get("relu_fn");
  ASSERT_NE(f, nullptr);
  HostArray good({2, 3}, kFloat32), out({2, 3}, kFloat32);
  // wrong argument count
  EXPECT_EQ(Call(f, {&good}), -1);
  EXPECT_STREQ(TVMGetLastError(), "relu_fn: expected 2 arguments, got 1");
  // wrong shape
  HostArray bad_shape({2, 4}, kFloat32);
  EXPECT_EQ(Call(f, {&bad_shape, &out}), -1);
  EXPECT_STREQ(TVMGetLastError(), "relu_fn: argument 0 ('a') expected shape[1] == 3, got 4");
  // wrong dtype
  HostArray bad_dtype({2, 3}, kInt32);
  EXPECT_EQ(Call(f, {&good, &bad_dtype}), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("argument 1"), std::string::npos);
  EXPECT_NE(std::string(TVMGetLastError()).find("expected dtype float32"), std::string::npos);
  // wrong ndim
  HostArray bad_ndim({6}, kFloat32);
  EXPECT_EQ(Call(f, {&bad_ndim, &out}), -1);
  EXPECT_STREQ(TVMGetLastError(), "relu_fn: argument 0 ('a') expected ndim 2, got 1");
  // non-compact strides
  int64_t strides[2] = {4, 1};
  good.tensor.strides = strides;
  EXPECT_EQ(Call(f, {&good, &out}), -1);
  EXPECT_STREQ(TVMGetLastError(),
               "relu_fn: argument 0 ('a') must be compact: expected strides[0] == 3, got 4");
  int64_t compact[2] = {3, 1};
  good.tensor.strides = compact;
  EXPECT_EQ(Call(f, {&good, &out}), 0);
  // wrong type code
  TVMValue v[2];
  int32_t codes[2] = {kTVMArgInt, kTVMDLTensorHandle};
  v[0].v_int64 = 5;
  v[1].v_handle = &out.tensor;
  TVMValue ret;
  int32_t rc;
  EXPECT_EQ(f(v, codes, 2, &ret, &rc, nullptr), -1);
  EXPECT_STREQ(TVMGetLastError(),
               "relu_fn: argument 0 ('a') expected a tensor (type code 7 or 13), got type code 0");
}

}  // namespace
}  // namespace ember::compiler
