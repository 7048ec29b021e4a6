// Pooling group schedule (compiler/schedule/pool2d.cc): MaxPool, AveragePool (count_include_pad
// both ways), GlobalMaxPool and GlobalAveragePool are compiled for the host, the loop IR is
// checked to come from the schedule, and the results are compared with a reference loop nest over
// strides, pads (asymmetric too), ceil_mode output shapes, odd sizes, tiny planes, batches and
// fused epilogues. MaxPool with an Indices output and dilated pools stay on the default schedule.
#include <dlfcn.h>
#include <ember/compiler/lower.h>
#include <ember/runtime/c_runtime_api.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>

#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::ReadFile;
using testing::ScopedEnv;

using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::Library;

struct PoolCase {
  const char* op;  // MaxPool or AveragePool
  int64_t n, c, h, w;
  int64_t kh, kw, sh, sw;
  int64_t pt, pl, pb, pr;  // pads: top, left, bottom, right
  bool ceil_mode = false;
  bool include_pad = false;
  bool relu = false;   // fused epilogue
  bool one_d = false;  // [N, C, W] input (h, kh, sh, pt, pb must be 1, 1, 1, 0, 0)
};

std::string CaseName(const PoolCase& c) {
  std::ostringstream os;
  os << c.op << " n" << c.n << "c" << c.c << "h" << c.h << "w" << c.w << " k" << c.kh << "x" << c.kw
     << " s" << c.sh << "x" << c.sw << " p" << c.pt << c.pl << c.pb << c.pr
     << (c.ceil_mode ? " ceil" : "") << (c.include_pad ? " incl" : "") << (c.relu ? " relu" : "")
     << (c.one_d ? " 1-D" : "");
  return os.str();
}

int64_t OutDim(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, bool ceil_mode) {
  int64_t span = in + p0 + p1 - k;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  // ONNX: the last window must start inside the input or the leading padding.
  if (ceil_mode && (o - 1) * s >= in + p0) --o;
  return o;
}

// Builds the group (for the host, or for `target`), checks which schedule took it, runs it and
// compares with the reference.
void CheckPool(const PoolCase& pc, const std::string& target = "") {
  SCOPED_TRACE(CaseName(pc) + " " + target);
  const bool is_max = std::string(pc.op) == "MaxPool";
  const int64_t oh = OutDim(pc.h, pc.kh, pc.sh, pc.pt, pc.pb, pc.ceil_mode);
  const int64_t ow = OutDim(pc.w, pc.kw, pc.sw, pc.pl, pc.pr, pc.ceil_mode);
  std::vector<int64_t> oshape{pc.n, pc.c, oh, ow};
  std::vector<int64_t> ishape{pc.n, pc.c, pc.h, pc.w};
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{pc.kh, pc.kw}},
                {"strides", std::vector<int64_t>{pc.sh, pc.sw}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{pc.pt, pc.pl, pc.pb, pc.pr}},
                {"ceil_mode", int64_t{pc.ceil_mode ? 1 : 0}}};
  if (pc.one_d) {
    ASSERT_TRUE(pc.h == 1 && pc.kh == 1 && pc.sh == 1 && pc.pt == 0 && pc.pb == 0);
    oshape = {pc.n, pc.c, ow};
    ishape = {pc.n, pc.c, pc.w};
    attrs["kernel_shape"] = std::vector<int64_t>{pc.kw};
    attrs["strides"] = std::vector<int64_t>{pc.sw};
    attrs["dilations"] = std::vector<int64_t>{1};
    attrs["pads"] = std::vector<int64_t>{pc.pl, pc.pr};
  }
  KernelGraph kg;
  int x = kg.Input("x", ishape);
  if (!is_max) attrs["count_include_pad"] = int64_t{pc.include_pad ? 1 : 0};
  int y = kg.Add(pc.op, {x}, {TensorType{oshape, kFloat32}}, attrs)[0];
  if (pc.relu) y = kg.Add("Relu", {y}, {TensorType{oshape, kFloat32}})[0];
  char tmpl[] = "/tmp/ember_pool_test_XXXXXX";
  std::string dump = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dump;
  Library lib({kg.Group("pool", {y})}, bo, target.empty() ? Target::Host() : Target::Parse(target));
  std::string loops = ReadFile(dump + "/kernels.loop.txt");
  EXPECT_NE(loops.find("_row"), std::string::npos) << "pool schedule did not take the group";
  std::filesystem::remove_all(dump);
  auto f = lib.Get("pool");
  ASSERT_NE(f, nullptr);
  HostArray hx(ishape, kFloat32), out(oshape, kFloat32);
  hx.FillRandom(21, -4.f, 2.f);
  ASSERT_EQ(Call(f, {&hx, &out}), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t p = 0; p < pc.n * pc.c; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        int64_t valid = 0, padded = 0;
        for (int64_t a = 0; a < pc.kh; ++a)
          for (int64_t b = 0; b < pc.kw; ++b) {
            int64_t iy = i * pc.sh + a - pc.pt, ix = j * pc.sw + b - pc.pl;
            if (iy < pc.h + pc.pb && ix < pc.w + pc.pr) ++padded;
            if (iy < 0 || iy >= pc.h || ix < 0 || ix >= pc.w) continue;
            double v = hx.data<float>()[(p * pc.h + iy) * pc.w + ix];
            acc = is_max ? std::max(acc, v) : acc + v;
            ++valid;
          }
        if (!is_max)
          acc /= static_cast<double>(std::max<int64_t>(pc.include_pad ? padded : valid, 1));
        if (pc.relu) acc = std::max(acc, 0.0);
        float got = out.data<float>()[(p * oh + i) * ow + j];
        if (!(std::fabs(got - acc) <= 1e-5 + 1e-5 * std::fabs(acc)) && ++bad <= 5) {
          ADD_FAILURE() << "out[" << p << "," << i << "," << j << "] = " << got << ", expected "
                        << acc;
        }
      }
  EXPECT_EQ(bad, 0);
}

TEST(PoolSchedule, MaxPoolMatchesTheReference) {
  const std::vector<PoolCase> cases = {
      {"MaxPool", 1, 64, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1},     // ResNet stem shape, parallel
      {"MaxPool", 1, 3, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1},        // stride 1, odd sizes
      {"MaxPool", 2, 3, 11, 13, 3, 3, 2, 2, 1, 1, 1, 1},      // batch 2, odd, stride 2
      {"MaxPool", 1, 2, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0},        // 2x2 stride 2, no padding
      {"MaxPool", 1, 2, 7, 7, 2, 2, 2, 2, 0, 0, 0, 0, true},  // ceil_mode: last window clipped
      {"MaxPool", 1, 2, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, true},  // ceil_mode with pads
      {"MaxPool", 1, 2, 10, 9, 3, 2, 1, 2, 0, 1, 2, 0},       // asymmetric pads and strides
      {"MaxPool", 1, 2, 12, 12, 3, 3, 3, 3, 1, 1, 1, 1},      // stride 3
      {"MaxPool", 1, 3, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1},        // 1x1 plane, windows mostly pad
      {"MaxPool", 1, 2, 2, 2, 3, 3, 1, 1, 1, 1, 1, 1},        // kernel wider than the input
      {"MaxPool", 1, 2, 5, 40, 1, 5, 1, 4, 0, 2, 0, 2},       // 1-row kernel, stride 4
      {"MaxPool", 1, 4, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, false, false, true},  // + Relu epilogue
  };
  for (const PoolCase& c : cases) CheckPool(c);
}

TEST(PoolSchedule, AveragePoolMatchesTheReferenceWithAndWithoutPadCounting) {
  for (bool incl : {false, true}) {
    const std::vector<PoolCase> cases = {
        {"AveragePool", 1, 3, 9, 7, 3, 3, 1, 1, 1, 1, 1, 1, false, incl},
        {"AveragePool", 2, 64, 17, 15, 3, 3, 2, 2, 1, 1, 1, 1, false, incl},     // parallel
        {"AveragePool", 1, 2, 7, 7, 2, 2, 2, 2, 0, 0, 0, 0, true, incl},         // ceil_mode
        {"AveragePool", 1, 2, 6, 6, 3, 3, 2, 2, 1, 1, 1, 1, true, incl},         // ceil + pads
        {"AveragePool", 1, 2, 10, 9, 3, 2, 1, 2, 0, 1, 2, 0, false, incl},       // asymmetric
        {"AveragePool", 1, 3, 1, 1, 2, 2, 1, 1, 1, 1, 1, 1, false, incl},        // 1x1 plane
        {"AveragePool", 1, 2, 14, 14, 5, 5, 3, 3, 2, 2, 2, 2, false, incl},      // 5x5 stride 3
        {"AveragePool", 1, 2, 8, 8, 2, 2, 2, 2, 1, 1, 1, 1, false, incl, true},  // + Relu
    };
    for (const PoolCase& c : cases) CheckPool(c);
  }
}

#if defined(__x86_64__)
// The loop nests are target independent; LLVM picks the vector width. Every x86 class the host can
// execute (SSE2 baseline, AVX2, AVX-512) runs a stride-2 and a stride-1 case.
TEST(PoolSchedule, EveryX86VectorWidthTheHostRunsMatchesTheReference) {
  std::vector<std::string> targets = {"llvm -mcpu=x86-64"};
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) targets.push_back("llvm -mcpu=haswell");
  if (__builtin_cpu_supports("avx512f")) targets.push_back("llvm -mcpu=skylake-avx512");
  for (const std::string& t : targets) {
    CheckPool({"MaxPool", 1, 5, 19, 23, 3, 3, 2, 2, 1, 1, 1, 1}, t);
    CheckPool({"AveragePool", 1, 3, 12, 37, 3, 3, 1, 1, 1, 1, 1, 1, false, true}, t);
  }
}
#endif

// Global pool over shape `in`, optionally followed by Add of a per-channel input.
void CheckGlobal(const char* op, std::vector<int64_t> in, bool add_bias) {
  SCOPED_TRACE(std::string(op) + " " + std::to_string(in.size()) + "-D plane " +
               std::to_string(in.back()) + (add_bias ? " +bias" : ""));
  const bool is_max = std::string(op) == "GlobalMaxPool";
  std::vector<int64_t> oshape = in;
  for (size_t d = 2; d < oshape.size(); ++d) oshape[d] = 1;
  std::vector<int64_t> bshape = oshape;
  bshape[0] = 1;
  KernelGraph kg;
  int x = kg.Input("x", in);
  int b = add_bias ? kg.Input("b", bshape) : -1;
  int y = kg.Add(op, {x}, {TensorType{oshape, kFloat32}})[0];
  if (add_bias) y = kg.Add("Add", {y, b}, {TensorType{oshape, kFloat32}})[0];
  char tmpl[] = "/tmp/ember_pool_test_XXXXXX";
  std::string dump = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dump;
  Library lib({kg.Group("gpool", {y})}, bo);
  EXPECT_NE(ReadFile(dump + "/kernels.loop.txt").find("_part"), std::string::npos)
      << "pool schedule did not take the group";
  std::filesystem::remove_all(dump);
  auto f = lib.Get("gpool");
  ASSERT_NE(f, nullptr);
  HostArray hx(in, kFloat32), hb(bshape, kFloat32), out(oshape, kFloat32);
  hx.FillRandom(31, -3.f, 1.f);
  hb.FillRandom(32);
  std::vector<HostArray*> args{&hx};
  if (add_bias) args.push_back(&hb);
  args.push_back(&out);
  ASSERT_EQ(Call(f, args), 0) << TVMGetLastError();
  const int64_t planes = in[0] * in[1];
  int64_t spatial = 1;
  for (size_t d = 2; d < in.size(); ++d) spatial *= in[d];
  int bad = 0;
  for (int64_t p = 0; p < planes; ++p) {
    double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
    for (int64_t k = 0; k < spatial; ++k) {
      double v = hx.data<float>()[p * spatial + k];
      acc = is_max ? std::max(acc, v) : acc + v;
    }
    if (!is_max) acc /= static_cast<double>(spatial);
    if (add_bias) acc += hb.data<float>()[p % in[1]];
    float got = out.data<float>()[p];
    if (!(std::fabs(got - acc) <= 1e-5 + 1e-5 * std::fabs(acc)) && ++bad <= 5) {
      ADD_FAILURE() << "out[" << p << "] = " << got << ", expected " << acc;
    }
  }
  EXPECT_EQ(bad, 0);
}

TEST(PoolSchedule, OneDimensionalPoolsAreOneRow) {
  PoolCase c{"MaxPool", 2, 3, 1, 21, 1, 3, 1, 2, 0, 1, 0, 1};
  c.one_d = true;
  CheckPool(c);
  for (bool incl : {false, true}) {
    PoolCase a{"AveragePool", 1, 4, 1, 20, 1, 4, 1, 3, 0, 2, 0, 2, true, incl};
    a.one_d = true;
    CheckPool(a);
  }
}

TEST(PoolSchedule, GlobalPoolsMatchTheReference) {
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    CheckGlobal(op, {1, 512, 7, 7}, false);  // ResNet head, parallel
    CheckGlobal(op, {2, 3, 5, 5}, false);    // batch 2, plane smaller than the lanes
    CheckGlobal(op, {1, 2, 1, 1}, false);    // 1-element planes
    CheckGlobal(op, {1, 4, 16, 16}, false);  // no tail
    CheckGlobal(op, {1, 3, 37}, false);      // 3-D, tail
    CheckGlobal(op, {1, 8, 9, 11}, true);    // broadcast Add epilogue
  }
}

// Groups the schedule must leave to the default schedule, which still computes them correctly.
TEST(PoolSchedule, IndicesAndDilationStayOnTheDefaultSchedule) {
  for (bool indices : {true, false}) {
    SCOPED_TRACE(indices ? "Indices" : "dilation 2");
    KernelGraph kg;
    int x = kg.Input("x", {1, 2, 6, 6});
    int64_t d = indices ? 1 : 2;
    int64_t o = indices ? 3 : 2;
    AttrMap attrs{{"kernel_shape", std::vector<int64_t>{2, 2}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"dilations", std::vector<int64_t>{d, d}},
                  {"pads", std::vector<int64_t>{0, 0, 0, 0}}};
    std::vector<TensorType> outs{TensorType{{1, 2, o, o}, kFloat32}};
    if (indices) outs.push_back(TensorType{{1, 2, o, o}, kInt64});
    std::vector<int> ys = kg.Add("MaxPool", {x}, outs, attrs);
    char tmpl[] = "/tmp/ember_pool_test_XXXXXX";
    std::string dump = mkdtemp(tmpl);
    BuildOptions bo;
    bo.dump_dir = dump;
    Library lib({kg.Group("mp", ys)}, bo);
    EXPECT_EQ(ReadFile(dump + "/kernels.loop.txt").find("_row"), std::string::npos);
    std::filesystem::remove_all(dump);
    auto f = lib.Get("mp");
    ASSERT_NE(f, nullptr);
    HostArray hx({1, 2, 6, 6}, kFloat32), out({1, 2, o, o}, kFloat32), idx({1, 2, o, o}, kInt64);
    hx.FillRandom(41);
    std::vector<HostArray*> args{&hx, &out};
    if (indices) args.push_back(&idx);
    ASSERT_EQ(Call(f, args), 0) << TVMGetLastError();
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t i = 0; i < o; ++i)
        for (int64_t j = 0; j < o; ++j) {
          float best = -std::numeric_limits<float>::infinity();
          int64_t arg = 0;
          for (int64_t a = 0; a < 2; ++a)
            for (int64_t b = 0; b < 2; ++b) {
              int64_t iy = i * 2 + a * d, ix = j * 2 + b * d;
              float v = hx.data<float>()[(p * 6 + iy) * 6 + ix];
              if (v > best) {
                best = v;
                arg = (p * 6 + iy) * 6 + ix;
              }
            }
          EXPECT_EQ(out.data<float>()[(p * o + i) * o + j], best);
          if (indices) {
            EXPECT_EQ(idx.data<int64_t>()[(p * o + i) * o + j], arg);
          }
        }
  }
}

// The schedule's loop nests compile for both ARM targets (NEON vectorisation of the same IR).
TEST(PoolSchedule, CrossCompilesForAArch64AndArmv7) {
  for (const char* target :
       {"llvm -mtriple=aarch64-linux-gnu", "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon"}) {
    SCOPED_TRACE(target);
    KernelGraph kg;
    int x = kg.Input("x", {1, 8, 15, 15});
    AttrMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                  {"strides", std::vector<int64_t>{2, 2}},
                  {"dilations", std::vector<int64_t>{1, 1}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    int y = kg.Add("MaxPool", {x}, {TensorType{{1, 8, 8, 8}, kFloat32}}, attrs)[0];
    int z = kg.Add("GlobalAveragePool", {y}, {TensorType{{1, 8, 1, 1}, kFloat32}})[0];
    FusedGroup g1 = kg.Group("mp", {y});
    g1.nodes = {g1.nodes[0]};
    FusedGroup g2 = kg.Group("gap", {z});
    g2.nodes = {g2.nodes[1]};
    g2.inputs = {y};
    char tmpl[] = "/tmp/ember_pool_arm_XXXXXX";
    std::string dir = mkdtemp(tmpl);
    BuildOptions bo;
    bo.dump_dir = dir;
    EXPECT_NO_THROW(
        testing::BuildWithStrategy({g1, g2}, Target::Parse(target), dir + "/lib.so", bo));
    std::string loops = ReadFile(dir + "/kernels.loop.txt");
    EXPECT_NE(loops.find("_row"), std::string::npos);
    EXPECT_NE(loops.find("_part"), std::string::npos);
    EXPECT_TRUE(std::filesystem::exists(dir + "/lib.so"));
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace ember::compiler
