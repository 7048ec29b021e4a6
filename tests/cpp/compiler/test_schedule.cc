// Group schedules (compiler/schedule/): every entry of the per-target table is forced on the host
// (EMBER_SCHEDULE=NAME) and its convolutions are compared with a reference loop nest, over strides,
// pads, groups (depthwise), 1x1 kernels, batches and fused epilogues (bias, Relu, residual Add).
#include <ember/compiler/lower.h>
#include <ember/compiler/transform.h>
#include <ember/runtime/c_runtime_api.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
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

struct ConvCase {
  int64_t n, c, h, w, oc, k, stride, pad, group;
  bool bias, relu, residual;
  int64_t dilation = 1;
};

std::string CaseName(const ConvCase& c) {
  std::ostringstream os;
  os << "n" << c.n << "c" << c.c << "h" << c.h << "w" << c.w << "oc" << c.oc << "k" << c.k << "s"
     << c.stride << "p" << c.pad << "g" << c.group << (c.bias ? "b" : "") << (c.relu ? "r" : "")
     << (c.residual ? "a" : "");
  if (c.dilation > 1) os << "d" << c.dilation;
  return os.str();
}

// How a case is compiled: a forced table entry (or none), a loop-IR marker proving which kernel
// took the group or how it split the work (or none), and weights prepacked as PackConvWeights does
// (block > 1) or OIHW.
struct Build {
  const char* schedule;
  const char* marker;
  int64_t packed_block;
};

Build ForEntry(const schedule::ScheduleEntry& e) {
  switch (e.kind) {
    case schedule::ScheduleKind::kConv2d1x1:
      return Build{e.name, "accgm0_0[", 0};
    case schedule::ScheduleKind::kConv2dOcVec:
      return Build{e.name, "accm0_0[", 0};
    case schedule::ScheduleKind::kConv2dWide:
    case schedule::ScheduleKind::kDepthwiseConv2d:      // test_depthwise.cc
    case schedule::ScheduleKind::kDense:                // test_dense.cc
    case schedule::ScheduleKind::kConv2dInt8:           // test_conv_int8.cc
    case schedule::ScheduleKind::kDepthwiseConv2dInt8:  // tests/python/test_quantized.py
    case schedule::ScheduleKind::kExpandDepthwise:      // tests/python/test_expand_depthwise.py
      break;
  }
  return Build{e.name, "acc0_0[", 0};
}

// Compiles the case as `build` says, runs it and compares with a reference.
void CheckConv(const Build& build, const ConvCase& cc) {
  const char* schedule_name = build.schedule != nullptr ? build.schedule : "default";
  SCOPED_TRACE(std::string(schedule_name) + " " + CaseName(cc) + " packed " +
               std::to_string(build.packed_block));
  ScopedEnv force("EMBER_SCHEDULE", build.schedule != nullptr ? build.schedule : "");
  ScopedEnv disable("EMBER_DISABLE_SCHEDULES", build.schedule != nullptr ? "0" : "1");
  const int64_t span = (cc.k - 1) * cc.dilation + 1;
  const int64_t oh = (cc.h + 2 * cc.pad - span) / cc.stride + 1;
  const int64_t ow = (cc.w + 2 * cc.pad - span) / cc.stride + 1;
  const int64_t icg = cc.c / cc.group;
  std::vector<int64_t> oshape{cc.n, cc.oc, oh, ow};
  KernelGraph kg;
  int x = kg.Input("x", {cc.n, cc.c, cc.h, cc.w});
  int w = kg.Input("w", {cc.oc, icg, cc.k, cc.k});
  std::vector<int> conv_in{x, w};
  if (cc.bias) conv_in.push_back(kg.Input("b", {cc.oc}));
  int r = cc.residual ? kg.Input("r", oshape) : -1;
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{cc.k, cc.k}},
                {"strides", std::vector<int64_t>{cc.stride, cc.stride}},
                {"dilations", std::vector<int64_t>{cc.dilation, cc.dilation}},
                {"pads", std::vector<int64_t>{cc.pad, cc.pad, cc.pad, cc.pad}},
                {"group", cc.group}};
  if (build.packed_block > 1) attrs[kPackedWeightBlockAttr] = build.packed_block;
  int y = kg.Add("Conv", conv_in, {TensorType{oshape, kFloat32}}, attrs)[0];
  if (cc.residual) y = kg.Add("Add", {y, r}, {TensorType{oshape, kFloat32}})[0];
  if (cc.relu) y = kg.Add("Relu", {y}, {TensorType{oshape, kFloat32}})[0];
  std::string loops;
  std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
  // The marker (the schedule's tile accumulators, or a loop it must emit) is in the loop IR.
  if (build.marker != nullptr) {
    EXPECT_NE(loops.find(build.marker), std::string::npos)
        << "expected \"" << build.marker << "\" in the loop IR of " << schedule_name
        << " (absent: another schedule took the group, or this one emitted other loops); got:\n"
        << loops;
  }
  auto f = lib->Get("conv");
  ASSERT_NE(f, nullptr);
  HostArray hx({cc.n, cc.c, cc.h, cc.w}, kFloat32), hw({cc.oc, icg, cc.k, cc.k}, kFloat32),
      hb({cc.oc}, kFloat32), hr(oshape, kFloat32), out(oshape, kFloat32);
  hx.FillRandom(11);
  hw.FillRandom(12);
  hb.FillRandom(13);
  hr.FillRandom(14);
  HostArray hw_call(hw.shape, kFloat32);
  std::copy(hw.bytes.begin(), hw.bytes.end(), hw_call.bytes.begin());
  if (build.packed_block > 1) testing::PackWeightsLikeEmberc(&hw_call, build.packed_block, 1);
  std::vector<HostArray*> call_args{&hx, &hw_call};
  if (cc.bias) call_args.push_back(&hb);
  if (cc.residual) call_args.push_back(&hr);
  call_args.push_back(&out);
  ASSERT_EQ(Call(f, call_args), 0) << TVMGetLastError();
  const testing::ConvDims dims{cc.c,      cc.h,   cc.w,     cc.oc,      cc.k,
                               cc.stride, cc.pad, cc.group, cc.dilation};
  int bad = 0;
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t o = 0; o < cc.oc; ++o)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double acc = (cc.bias ? hb.data<float>()[o] : 0.0) +
                       testing::ReferenceConvAt(hx, hw, dims, n, o, i, j);
          int64_t idx = ((n * cc.oc + o) * oh + i) * ow + j;
          if (cc.residual) acc += hr.data<float>()[idx];
          if (cc.relu) acc = std::max(acc, 0.0);
          float got = out.data<float>()[idx];
          if (std::fabs(got - acc) > 1e-4 + 1e-4 * std::fabs(acc) && ++bad <= 5) {
            ADD_FAILURE() << "out[" << n << "," << o << "," << i << "," << j << "] = " << got
                          << ", expected " << acc;
          }
        }
  EXPECT_EQ(bad, 0);
}

// Shapes for the wide kernel (any channel count).
const std::vector<ConvCase>& WideCases() {
  static const std::vector<ConvCase> cases = {
      {1, 3, 9, 9, 4, 3, 2, 1, 1, true, false, false},     // strided, padded, bias
      {1, 8, 12, 11, 8, 3, 1, 1, 1, false, true, true},    // residual + relu, odd width
      {2, 6, 7, 7, 12, 1, 1, 0, 1, true, true, false},     // 1x1, batch 2
      {1, 5, 10, 10, 6, 1, 2, 0, 1, false, false, false},  // 1x1 stride 2 (downsample)
      {1, 8, 9, 9, 8, 3, 1, 1, 8, true, true, false},      // depthwise
      {1, 8, 10, 10, 8, 3, 2, 1, 8, false, true, false},   // depthwise stride 2
      {1, 3, 15, 15, 5, 7, 2, 3, 1, true, false, false},   // 7x7 stride 2 stem
      {1, 4, 6, 6, 6, 3, 1, 0, 2, true, false, false},     // grouped, no padding
  };
  return cases;
}

// Shapes for the 1x1 kernel: planes of at least 4 x 64 positions, with a tail tile.
const std::vector<ConvCase>& Gemm1x1Cases() {
  static const std::vector<ConvCase> cases = {
      {1, 8, 16, 17, 12, 1, 1, 0, 1, true, true, true},     // bias + residual + relu, tail
      {2, 5, 20, 20, 6, 1, 1, 0, 1, false, false, false},   // batch 2, odd channel counts
      {1, 8, 16, 16, 8, 1, 1, 0, 2, true, false, false},    // grouped
      {1, 24, 16, 24, 32, 1, 1, 0, 1, false, true, false},  // several channel blocks
  };
  return cases;
}

// Shapes for the channels-in-lanes kernel: output channels per group a multiple of 16, widths
// with and without a tail tile.
const std::vector<ConvCase>& OcVecCases() {
  static const std::vector<ConvCase> cases = {
      {1, 3, 9, 9, 32, 3, 2, 1, 1, true, false, false},       // strided, padded, bias
      {1, 8, 12, 13, 32, 3, 1, 1, 1, false, true, true},      // residual + relu, tail columns
      {2, 6, 7, 7, 16, 1, 1, 0, 1, true, true, false},        // 1x1, batch 2, one vector
      {1, 5, 10, 10, 48, 1, 2, 0, 1, false, false, false},    // 1x1 stride 2, 48 = 3 vectors
      {1, 3, 15, 15, 32, 7, 2, 3, 1, true, false, false},     // 7x7 stride 2 stem
      {1, 4, 6, 6, 64, 3, 1, 0, 2, true, false, false},       // grouped, no padding
      {1, 16, 29, 31, 32, 3, 1, 1, 1, false, true, false},    // wide rows: several tiles + tail
      {1, 16, 7, 5, 32, 3, 1, 1, 1, true, true, false},       // narrow: multi-row tiles + row tail
      {1, 16, 20, 21, 32, 3, 1, 2, 1, true, true, false, 2},  // dilated, "same" padding
      {1, 8, 17, 19, 32, 3, 2, 3, 1, false, false, true, 3},  // dilated, strided
  };
  return cases;
}

TEST(Schedule, TableNamesAreUniqueAndCarryTheTarget) {
  std::set<std::string> names;
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name;
    if (e.kind == schedule::ScheduleKind::kDepthwiseConv2d) {
      EXPECT_GE(e.depthwise.lanes, 1);
    } else if (e.kind == schedule::ScheduleKind::kExpandDepthwise) {
      EXPECT_GE(e.expand_dw.lanes, 1);
      EXPECT_GE(e.expand_dw.expand_accumulators, 1);
      EXPECT_GE(e.expand_dw.dw_pixels, 1);
    } else if (e.kind == schedule::ScheduleKind::kDense) {
      EXPECT_GE(e.dense.lanes, 1);
      EXPECT_GE(e.dense.rows, 1);
      EXPECT_GE(e.dense.vectors, 1);
    } else if (e.kind == schedule::ScheduleKind::kConv2dInt8) {
      EXPECT_GE(e.conv_int8.lanes, 1);
      EXPECT_GE(e.conv_int8.oc_vectors, 1);
      EXPECT_GE(e.conv_int8.ow_block, 1);
    } else if (e.kind != schedule::ScheduleKind::kConv2dOcVec) {
      EXPECT_GE(e.conv.lanes, 1);
      EXPECT_GE(e.conv.oc_block, 1);
    } else {
      EXPECT_GE(e.conv_ocvec.lanes, 1);
      EXPECT_GE(e.conv_ocvec.ow_block, 1);
    }
  }
  EXPECT_FALSE(names.empty());
}

// A conv entry of the schedule table; depthwise, dense and int8 kernels have tests of their own
// (test_depthwise.cc, test_dense.cc, test_conv_int8.cc; the int8 depthwise one in
// tests/python/test_quantized.py).
struct ConvEntry {
  const schedule::ScheduleEntry* entry;
};
void PrintTo(const ConvEntry& c, std::ostream* os) { *os << c.entry->name; }

std::vector<ConvEntry> ConvEntries() {
  std::vector<ConvEntry> entries;
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    if (e.kind == schedule::ScheduleKind::kConv2d1x1 ||
        e.kind == schedule::ScheduleKind::kConv2dOcVec ||
        e.kind == schedule::ScheduleKind::kConv2dWide) {
      entries.push_back(ConvEntry{&e});
    }
  }
  return entries;
}

// One test per entry: a failure names the kernel, and CTest spreads the entries over the cores.
class EveryConvEntry : public ::testing::TestWithParam<ConvEntry> {};

TEST_P(EveryConvEntry, MatchesTheReferenceConv) {
  const schedule::ScheduleEntry& e = *GetParam().entry;
  const std::vector<ConvCase>& cases = e.kind == schedule::ScheduleKind::kConv2dWide ? WideCases()
                                       : e.kind == schedule::ScheduleKind::kConv2d1x1
                                           ? Gemm1x1Cases()
                                           : OcVecCases();
  for (const ConvCase& c : cases) CheckConv(ForEntry(e), c);
}

INSTANTIATE_TEST_SUITE_P(Schedule, EveryConvEntry, ::testing::ValuesIn(ConvEntries()),
                         [](const ::testing::TestParamInfo<ConvEntry>& info) {
                           return std::string(info.param.entry->name);
                         });

// Weights packed at compile time are read right by the kernel that expects them, by a kernel
// that refuses them (the wide one) and by the default schedule.
TEST(Schedule, PackedWeightsAreReadRightByEveryPath) {
  const ConvCase c{1, 8, 12, 13, 32, 3, 1, 1, 1, true, true, false};
  CheckConv(Build{"conv2d_nchw_ocvec_avx512", "accm0_0[", 32}, c);
  CheckConv(Build{"conv2d_nchw_ocvec_avx512", nullptr, 16}, c);  // other block: default path
  CheckConv(Build{"conv2d_nchw_wide_avx512", nullptr, 32}, c);
  CheckConv(Build{nullptr, nullptr, 32}, c);
}

// An RGB image's zero-padded copy is split among the threads a padded row at a time (3 x 113
// rows), not a plane at a time: 3 planes on 2 threads left one idle for a third of the copy.
TEST(Schedule, ThePaddedCopyOfAnImageRunsInParallelByRows) {
  const ConvCase c{1, 3, 112, 112, 32, 3, 2, 1, 1, true, true, false};
  CheckConv(Build{"conv2d_nchw_ocvec_avx512", "parallel for cy in [0, 339)", 0}, c);
}

// Dilated taps: the channels-in-lanes kernel takes them (EveryConvEntry);
// the wide kernel, whose phase-split copy assumes adjacent taps, must leave them to the default
// schedule, which stays right.
TEST(Schedule, KernelsThatNeedAdjacentTapsLeaveDilatedConvs) {
  const ConvCase c{1, 8, 12, 13, 8, 3, 1, 2, 1, true, true, false, 2};
  CheckConv(Build{"conv2d_nchw_wide_avx512", nullptr, 0}, c);
  ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_wide_avx512");
  KernelGraph kg;
  int x = kg.Input("x", {1, 8, 12, 13});
  int w = kg.Input("w", {8, 8, 3, 3});
  int y = kg.Add("Conv", {x, w}, {TensorType{{1, 8, 12, 13}, kFloat32}},
                 {{"kernel_shape", std::vector<int64_t>{3, 3}},
                  {"strides", std::vector<int64_t>{1, 1}},
                  {"dilations", std::vector<int64_t>{2, 2}},
                  {"pads", std::vector<int64_t>{2, 2, 2, 2}},
                  {"group", int64_t{1}}})[0];
  std::string loops;
  testing::BuildKernelWithLoops(kg, y, &loops);
  EXPECT_EQ(loops.find("acc0_0["), std::string::npos) << "the wide kernel took a dilated conv";
}

TEST(Schedule, TheOneByOneKernelReadsPackedWeights) {
  const ConvCase c{1, 24, 16, 24, 32, 1, 1, 0, 1, true, true, false};
  CheckConv(Build{"conv2d_1x1_avx512", "accgm0_0[", 32}, c);
  CheckConv(Build{"conv2d_1x1_avx2", "accgm0_0[", 16}, c);
}

// An epilogue that cannot run over flat plane positions, an operand broadcast along the rows only
// ([1, OC, 1, W]): the 1x1 kernel must leave it to another kernel, and the channels-in-lanes
// kernel takes it (its epilogue then runs row by row). A Sigmoid, which vectorises, both take.
// The result must stay right either way.
TEST(Schedule, EpiloguesThatAreNotPlaneFlat) {
  const int64_t c = 8, h = 16, w = 20, oc = 16;
  const std::vector<int64_t> oshape{1, oc, h, w};
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{1, 1}},
                {"strides", std::vector<int64_t>{1, 1}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{0, 0, 0, 0}},
                {"group", int64_t{1}}};
  for (const char* schedule : {"conv2d_1x1_avx512", "conv2d_nchw_ocvec_avx512"})
    for (bool sigmoid : {false, true}) {
      const bool one_by_one = std::string(schedule) == "conv2d_1x1_avx512";
      SCOPED_TRACE(std::string(schedule) + (sigmoid ? " sigmoid" : " row-broadcast add"));
      ScopedEnv force("EMBER_SCHEDULE", schedule);
      KernelGraph kg;
      int x = kg.Input("x", {1, c, h, w});
      int wt = kg.Input("w", {oc, c, 1, 1});
      int r = sigmoid ? -1 : kg.Input("r", {1, oc, 1, w});
      int y = kg.Add("Conv", {x, wt}, {TensorType{oshape, kFloat32}}, attrs)[0];
      y = sigmoid ? kg.Add("Sigmoid", {y}, {TensorType{oshape, kFloat32}})[0]
                  : kg.Add("Add", {y, r}, {TensorType{oshape, kFloat32}})[0];
      std::string loops;
      std::unique_ptr<Library> lib = testing::BuildKernelWithLoops(kg, y, &loops);
      if (one_by_one && !sigmoid) {
        EXPECT_EQ(loops.find("accgm0_0["), std::string::npos);
      } else if (one_by_one) {
        EXPECT_NE(loops.find("accgm0_0["), std::string::npos);
      } else {
        EXPECT_NE(loops.find("accm0_0["), std::string::npos);
      }
      HostArray hx({1, c, h, w}, kFloat32), hw({oc, c, 1, 1}, kFloat32),
          hr({1, oc, 1, w}, kFloat32), out(oshape, kFloat32);
      hx.FillRandom(21);
      hw.FillRandom(22);
      hr.FillRandom(23);
      std::vector<HostArray*> args{&hx, &hw};
      if (!sigmoid) args.push_back(&hr);
      args.push_back(&out);
      ASSERT_NE(lib->Get("conv"), nullptr);
      ASSERT_EQ(Call(lib->Get("conv"), args), 0) << TVMGetLastError();
      int bad = 0;
      for (int64_t o = 0; o < oc; ++o)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j) {
            double acc = 0;
            for (int64_t k = 0; k < c; ++k) {
              acc += double(hx.data<float>()[(k * h + i) * w + j]) * hw.data<float>()[o * c + k];
            }
            double want =
                sigmoid ? 1.0 / (1.0 + std::exp(-acc)) : acc + hr.data<float>()[o * w + j];
            float got = out.data<float>()[(o * h + i) * w + j];
            if (std::fabs(got - want) > 1e-4 + 1e-4 * std::fabs(want) && ++bad <= 5) {
              ADD_FAILURE() << "at (" << o << "," << i << "," << j << "): got " << got << " want "
                            << want;
            }
          }
      EXPECT_EQ(bad, 0);
    }
}

TEST(Schedule, HostTargetPicksAConvScheduleOnX86AndArm) {
  schedule::TargetClass host = schedule::ClassifyTarget(Target::Host());
  EXPECT_NE(host, schedule::TargetClass::kGeneric);
  EXPECT_EQ(schedule::ClassifyTarget(Target::Parse("llvm -mtriple=aarch64-linux-gnu")),
            schedule::TargetClass::kNeon64);
  EXPECT_EQ(
      schedule::ClassifyTarget(Target::Parse("llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon")),
      schedule::TargetClass::kNeon32);
}

TEST(Schedule, CrossCompilesForAArch64) {
  KernelGraph kg;
  int x = kg.Input("x", {1, 8, 10, 10});
  int w = kg.Input("w", {8, 8, 3, 3});
  AttrMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                {"strides", std::vector<int64_t>{1, 1}},
                {"dilations", std::vector<int64_t>{1, 1}},
                {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                {"group", int64_t{1}}};
  int y = kg.Add("Conv", {x, w}, {TensorType{{1, 8, 10, 10}, kFloat32}}, attrs)[0];
  char tmpl[] = "/tmp/ember_schedule_arm_XXXXXX";
  std::string dir = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dir;
  EXPECT_NO_THROW(testing::BuildWithStrategy({kg.Group("conv", {y})},
                                             Target::Parse("llvm -mtriple=aarch64-linux-gnu"),
                                             dir + "/lib.so", bo));
  EXPECT_NE(ReadFile(dir + "/kernels.loop.txt").find("_padded_ws"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ember::compiler
