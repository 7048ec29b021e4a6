// Depthwise conv schedule (compiler/schedule/depthwise_conv2d.cc): every entry of its table is
// forced on the host (EMBER_SCHEDULE=NAME) and compared with a reference loop nest over strides,
// pads, kernel sizes, odd and tiny planes, batches and fused epilogues (bias, Clip, Relu,
// residual Add); groups it must not take fall back; the kernels cross-compile for ARM.
#include <ember/compiler/lower.h>
#include <ember/runtime/c_runtime_api.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "../../../compiler/schedule/schedule.h"
#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::ReadFile;
using testing::ScopedEnv;

using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::Library;

// kScale: Mul by a per-channel input [1, OC, 1, 1]; kClipInputs: Clip with min and max given
// as scalar graph inputs (both are loads the schedule hoists out of its vector loop).
enum Epilogue : int {
  kNone = 0,
  kBias = 1,
  kClip = 2,
  kRelu = 4,
  kResidual = 8,
  kScale = 16,
  kClipInputs = 32
};

struct DwCase {
  int64_t n, c, h, w, k, stride, pad;
  int epilogue;
  int64_t multiplier = 1;  // OC = multiplier * C
};

std::string CaseName(const DwCase& c) {
  std::ostringstream os;
  os << "n" << c.n << "c" << c.c << "h" << c.h << "w" << c.w << "k" << c.k << "s" << c.stride << "p"
     << c.pad << "e" << c.epilogue << "m" << c.multiplier;
  return os.str();
}

int64_t OutSize(int64_t in, const DwCase& c) { return (in + 2 * c.pad - c.k) / c.stride + 1; }

struct DwGraph {
  KernelGraph kg;
  int y = -1;
};

DwGraph MakeGraph(const DwCase& cc) {
  DwGraph g;
  const int64_t oc = cc.c * cc.multiplier;
  std::vector<int64_t> oshape{cc.n, oc, OutSize(cc.h, cc), OutSize(cc.w, cc)};
  int x = g.kg.Input("x", {cc.n, cc.c, cc.h, cc.w});
  int w = g.kg.Input("w", {oc, 1, cc.k, cc.k});
  std::vector<int> conv_in{x, w};
  if (cc.epilogue & kBias) conv_in.push_back(g.kg.Input("b", {oc}));
  int r = (cc.epilogue & kResidual) ? g.kg.Input("r", oshape) : -1;
  int scale = (cc.epilogue & kScale) ? g.kg.Input("scale", {1, oc, 1, 1}) : -1;
  int lo = (cc.epilogue & kClipInputs) ? g.kg.Input("lo", {}) : -1;
  int hi = (cc.epilogue & kClipInputs) ? g.kg.Input("hi", {}) : -1;
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{cc.k, cc.k}},
                {"strides", std::vector<int64_t>{cc.stride, cc.stride}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{cc.pad, cc.pad, cc.pad, cc.pad}},
                {"group", cc.c}};
  TensorType ot{oshape, kFloat32};
  int y = g.kg.Add("Conv", conv_in, {ot}, attrs)[0];
  if (cc.epilogue & kResidual) y = g.kg.Add("Add", {y, r}, {ot})[0];
  if (cc.epilogue & kScale) y = g.kg.Add("Mul", {y, scale}, {ot})[0];
  if (cc.epilogue & kClipInputs) y = g.kg.Add("Clip", {y, lo, hi}, {ot})[0];
  if (cc.epilogue & kClip) {
    y = g.kg.Add("Clip", {y}, {ot}, AttrMap{{"min", 0.0}, {"max", 6.0}})[0];
  }
  if (cc.epilogue & kRelu) y = g.kg.Add("Relu", {y}, {ot})[0];
  g.y = y;
  return g;
}

// True when the depthwise schedule lowered the group (its row buffer is in the loop IR).
bool TookGroup(const std::string& loops) { return loops.find("_rows[") != std::string::npos; }

// Compiles the case under EMBER_SCHEDULE=schedule_name, runs it and compares with a reference;
// `expect_depthwise` says whether the depthwise schedule must have taken the group.
void CheckCase(const char* schedule_name, const DwCase& cc, bool expect_depthwise) {
  SCOPED_TRACE(std::string(schedule_name) + " " + CaseName(cc));
  ScopedEnv force("EMBER_SCHEDULE", schedule_name);
  const int64_t oc = cc.c * cc.multiplier;
  const int64_t oh = OutSize(cc.h, cc), ow = OutSize(cc.w, cc);
  std::vector<int64_t> oshape{cc.n, oc, oh, ow};
  DwGraph g = MakeGraph(cc);
  char tmpl[] = "/tmp/ember_depthwise_test_XXXXXX";
  std::string dump = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dump;
  Library lib({g.kg.Group("dw", {g.y})}, bo);
  EXPECT_EQ(TookGroup(ReadFile(dump + "/kernels.loop.txt")), expect_depthwise);
  std::filesystem::remove_all(dump);
  auto f = lib.Get("dw");
  ASSERT_NE(f, nullptr);
  HostArray hx({cc.n, cc.c, cc.h, cc.w}, kFloat32), hw({oc, 1, cc.k, cc.k}, kFloat32),
      hb({oc}, kFloat32), hr(oshape, kFloat32), out(oshape, kFloat32);
  hx.FillRandom(21, -2.f, 2.f);
  hw.FillRandom(22, -2.f, 2.f);
  hb.FillRandom(23);
  hr.FillRandom(24);
  HostArray hs({1, oc, 1, 1}, kFloat32), hlo({}, kFloat32), hhi({}, kFloat32);
  hs.FillRandom(25, 0.5f, 2.f);
  hlo.data<float>()[0] = -0.5f;
  hhi.data<float>()[0] = 1.5f;
  std::vector<HostArray*> args{&hx, &hw};
  if (cc.epilogue & kBias) args.push_back(&hb);
  if (cc.epilogue & kResidual) args.push_back(&hr);
  if (cc.epilogue & kScale) args.push_back(&hs);
  if (cc.epilogue & kClipInputs) {
    args.push_back(&hlo);
    args.push_back(&hhi);
  }
  args.push_back(&out);
  ASSERT_EQ(Call(f, args), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = (cc.epilogue & kBias) ? hb.data<float>()[o] : 0.0;
          const int64_t ic = o / cc.multiplier;
          for (int64_t kh = 0; kh < cc.k; ++kh)
            for (int64_t kw = 0; kw < cc.k; ++kw) {
              int64_t ih = i * cc.stride + kh - cc.pad, iw = j * cc.stride + kw - cc.pad;
              if (ih < 0 || ih >= cc.h || iw < 0 || iw >= cc.w) continue;
              acc += double{hx.data<float>()[((n * cc.c + ic) * cc.h + ih) * cc.w + iw]} *
                     hw.data<float>()[(o * cc.k + kh) * cc.k + kw];
            }
          const int64_t idx = ((n * oc + o) * oh + i) * ow + j;
          if (cc.epilogue & kResidual) acc += hr.data<float>()[idx];
          if (cc.epilogue & kScale) acc *= hs.data<float>()[o];
          if (cc.epilogue & kClipInputs) acc = std::min(std::max(acc, -0.5), 1.5);
          if (cc.epilogue & kClip) acc = std::min(std::max(acc, 0.0), 6.0);
          if (cc.epilogue & kRelu) acc = std::max(acc, 0.0);
          const float got = out.data<float>()[idx];
          if (!(std::fabs(got - acc) <= 1e-4 + 1e-5 * std::fabs(acc)) && ++bad <= 5) {
            ADD_FAILURE() << "out[" << n << "," << o << "," << i << "," << j << "] = " << got
                          << ", expected " << acc;
          }
        }
  EXPECT_EQ(bad, 0);
}

const std::vector<DwCase>& Cases() {
  static const std::vector<DwCase> cases = {
      {1, 8, 9, 9, 3, 1, 1, kBias | kClip},                  // MobileNet block, stride 1
      {1, 6, 12, 12, 3, 2, 1, kBias | kClip},                // stride 2, even size
      {1, 5, 13, 11, 3, 2, 1, kBias | kRelu},                // stride 2, odd sizes
      {2, 4, 10, 7, 3, 1, 0, kResidual},                     // batch 2, no pad, residual
      {1, 3, 11, 17, 5, 1, 2, kBias | kResidual | kRelu},    // 5x5 pad 2
      {1, 4, 16, 19, 5, 2, 2, kBias},                        // 5x5 stride 2
      {1, 7, 1, 1, 3, 1, 1, kBias | kClip},                  // 1x1 plane
      {1, 3, 2, 3, 3, 2, 1, kNone},                          // plane smaller than the kernel
      {1, 2, 5, 40, 3, 1, 1, kClip},                         // several vectors + overlapping tail
      {2, 3, 23, 37, 3, 2, 0, kBias | kClip},                // stride 2 without padding
      {1, 2, 70, 130, 3, 1, 1, kBias},                       // several row blocks per plane
      {1, 2, 61, 61, 3, 2, 1, kRelu},                        // stride 2 row blocks, odd
      {2, 5, 9, 14, 3, 1, 1, kBias | kScale | kClipInputs},  // hoisted per-channel loads
  };
  return cases;
}

std::vector<const schedule::ScheduleEntry*> DepthwiseEntries() {
  std::vector<const schedule::ScheduleEntry*> out;
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    if (e.kind == schedule::ScheduleKind::kDepthwiseConv2d) out.push_back(&e);
  }
  return out;
}

TEST(Depthwise, EveryTargetClassWithSimdHasAnEntry) {
  std::set<schedule::TargetClass> classes;
  for (const schedule::ScheduleEntry* e : DepthwiseEntries()) {
    EXPECT_GE(e->depthwise.lanes, 1) << e->name;
    classes.insert(e->target);
  }
  EXPECT_EQ(classes.size(), 5u);  // SSE, AVX2, AVX-512, NEON 64 and 32
}

TEST(Depthwise, EveryEntryMatchesTheReference) {
  // Entries with the same parameters lower to the same loop nest on the host: run one of them.
  std::set<std::pair<int64_t, int>> seen;
  for (const schedule::ScheduleEntry* e : DepthwiseEntries()) {
    if (!seen.insert({e->depthwise.lanes, e->depthwise.prefer_vector_bits}).second) continue;
    for (const DwCase& c : Cases()) CheckCase(e->name, c, true);
  }
  EXPECT_GE(seen.size(), 3u);
}

TEST(Depthwise, HostTargetPicksTheDepthwiseSchedule) {
  CheckCase("", DwCase{1, 16, 14, 14, 3, 1, 1, kBias | kClip}, true);
}

TEST(Depthwise, ChannelMultiplierAndOtherSchedulesFallBack) {
  const char* name = DepthwiseEntries().at(0)->name;
  // OC = 2 * C is not depthwise in this schedule's sense: another schedule computes it.
  CheckCase(name, DwCase{1, 4, 9, 9, 3, 1, 1, kBias, 2}, false);
  CheckCase("", DwCase{1, 4, 9, 9, 3, 2, 1, kRelu, 2}, false);
  // Forcing another schedule by name keeps the depthwise one out.
  CheckCase("conv2d_nchw_ocvec_avx512", DwCase{1, 8, 9, 9, 3, 1, 1, kBias}, false);
}

TEST(Depthwise, CrossCompilesForAArch64AndArmv7) {
  for (const char* spec :
       {"llvm -mtriple=aarch64-linux-gnu", "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon"}) {
    SCOPED_TRACE(spec);
    for (const DwCase& cc : {DwCase{1, 8, 10, 10, 3, 1, 1, kBias | kClip},
                             DwCase{1, 8, 11, 11, 3, 2, 1, kBias | kClip | kResidual}}) {
      DwGraph g = MakeGraph(cc);
      char tmpl[] = "/tmp/ember_depthwise_arm_XXXXXX";
      std::string dir = mkdtemp(tmpl);
      BuildOptions bo;
      bo.dump_dir = dir;
      EXPECT_NO_THROW(testing::BuildWithStrategy({g.kg.Group("dw", {g.y})}, Target::Parse(spec),
                                                 dir + "/lib.so", bo));
      EXPECT_TRUE(TookGroup(ReadFile(dir + "/kernels.loop.txt")));
      EXPECT_TRUE(std::filesystem::exists(dir + "/lib.so"));
      std::filesystem::remove_all(dir);
    }
  }
}

}  // namespace
}  // namespace ember::compiler
