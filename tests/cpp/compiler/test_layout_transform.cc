// LayoutTransform schedule (compiler/schedule/layout_transform.cc): NCHW <-> NCHW[x]c as register
// transposes, compiled for every x86 vector width the host runs (x = 4, 8, 16 as the width
// allows), checked to come from the schedule (its shuffles in the loop IR) and compared element
// by element with the layouts' definition: batches, several blocks, planes that are and are not
// a multiple of x, a blocked-side epilogue, a Cast to float32 before the transform (a float16
// model's), and the cases the schedule leaves to the default one.
#include <ember/compiler/ir/layout.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/half_float.h>

#include <algorithm>
#include <filesystem>
#include <random>
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
using testing::ReadFile;

struct TransformCase {
  int64_t n, c, h, w, block;
  bool to_blocked;
  bool relu = false;           // an epilogue after the transform, in its group
  bool flatten = false;        // a Flatten of the NCHW output, in its group (before a Gemm)
  DLDataType from = kFloat32;  // not float32: the input is cast to float32 in the group first
};

// Random elements of `a`'s type: float16 bit patterns of every finite kind (subnormals too),
// integers over their whole range.
void FillSource(HostArray& a, uint32_t seed) {
  if (a.dtype == kFloat32) return a.FillRandom(seed, -2.f, 2.f);
  std::mt19937 rng(seed);
  for (uint8_t& b : a.bytes) b = static_cast<uint8_t>(rng());
  if (a.dtype != kFloat16) return;
  for (int64_t i = 0; i < a.size(); ++i) {
    uint16_t& h = a.data<uint16_t>()[i];
    if ((h & 0x7c00u) == 0x7c00u) h &= 0xbfffu;  // infinity / NaN -> a finite half
  }
}

// Element i of `a` as the Cast to float32 gives it.
float SourceValue(HostArray& a, int64_t i) {
  if (a.dtype == kFloat16) return runtime::HalfToFloat(a.data<uint16_t>()[i]);
  if (a.dtype == kInt8) return static_cast<float>(a.data<int8_t>()[i]);
  if (a.dtype == kUInt8) return static_cast<float>(a.data<uint8_t>()[i]);
  if (a.dtype == kInt32) return static_cast<float>(a.data<int32_t>()[i]);
  return a.data<float>()[i];
}

std::string CaseName(const TransformCase& c) {
  std::ostringstream os;
  os << (c.to_blocked ? "NCHW->NCHW" : "NCHW") << c.block << "c" << (c.to_blocked ? "" : "->NCHW")
     << " n" << c.n << "c" << c.c << "h" << c.h << "w" << c.w << (c.relu ? " relu" : "")
     << (c.flatten ? " flatten" : "")
     << (c.from == kFloat32 ? "" : " cast from " + DTypeToString(c.from));
  return os.str();
}

// Compiles the case for `target`, checks whether the schedule took it (`expect_schedule`), runs it
// and compares with the layouts' definition: NCHW (n, ch, y, x) is NCHW[b]c (n, ch / b, y, x, ch %
// b).
void CheckTransform(const TransformCase& tc, const std::string& target, bool expect_schedule) {
  SCOPED_TRACE(CaseName(tc) + " " + target);
  const std::vector<int64_t> nchw{tc.n, tc.c, tc.h, tc.w};
  const std::vector<int64_t> blocked{tc.n, tc.c / tc.block, tc.h, tc.w, tc.block};
  const std::vector<int64_t>& ishape = tc.to_blocked ? nchw : blocked;
  const std::vector<int64_t>& oshape = tc.to_blocked ? blocked : nchw;
  KernelGraph kg;
  int x = kg.Input("x", ishape, tc.from);
  if (tc.from != kFloat32) {
    x = kg.Add("Cast", {x}, {TensorType{ishape, kFloat32}}, {{"to", int64_t{1}}})[0];
  }
  const std::string name = LayoutName(tc.block);
  AttrMap attrs{{kSrcLayoutAttr, tc.to_blocked ? std::string("NCHW") : name},
                {kDstLayoutAttr, tc.to_blocked ? name : std::string("NCHW")}};
  int y = kg.Add("LayoutTransform", {x}, {TensorType{oshape, kFloat32}}, attrs)[0];
  if (tc.relu) y = kg.Add("Relu", {y}, {TensorType{oshape, kFloat32}})[0];
  const std::vector<int64_t> flat{tc.n, tc.c * tc.h * tc.w};
  if (tc.flatten) {
    y = kg.Add("Flatten", {y}, {TensorType{flat, kFloat32}}, {{"axis", int64_t{1}}})[0];
  }
  char tmpl[] = "/tmp/ember_layout_test_XXXXXX";
  const std::string dump = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dump;
  Library lib({kg.Group("lt", {y})}, bo, Target::Parse(target));
  const std::string loops = ReadFile(dump + "/kernels.loop.txt");
  std::filesystem::remove_all(dump);
  EXPECT_EQ(loops.find("shuffle(") != std::string::npos, expect_schedule) << loops.substr(0, 2000);
  auto f = lib.Get("lt");
  ASSERT_NE(f, nullptr);
  HostArray in(ishape, tc.from), out(tc.flatten ? flat : oshape, kFloat32);
  FillSource(in, 5);
  ASSERT_EQ(Call(f, {&in, &out}), 0) << TVMGetLastError();
  int bad = 0;
  for (int64_t n = 0; n < tc.n; ++n)
    for (int64_t ch = 0; ch < tc.c; ++ch)
      for (int64_t p = 0; p < tc.h * tc.w; ++p) {
        const int64_t flat = (n * tc.c + ch) * tc.h * tc.w + p;
        const int64_t block =
            ((n * (tc.c / tc.block) + ch / tc.block) * tc.h * tc.w + p) * tc.block + ch % tc.block;
        const int64_t src = tc.to_blocked ? flat : block, dst = tc.to_blocked ? block : flat;
        float want = SourceValue(in, src);
        if (tc.relu) want = std::max(want, 0.f);
        const float got = out.data<float>()[dst];
        if (got != want && ++bad <= 5) {
          ADD_FAILURE() << "n " << n << " channel " << ch << " pixel " << p << ": " << got
                        << ", expected " << want;
        }
      }
  EXPECT_EQ(bad, 0);
}

// The host's x86 targets and the widest block each one's vectors hold.
std::vector<std::pair<std::string, int64_t>> HostTargets() {
  std::vector<std::pair<std::string, int64_t>> targets;
#if defined(__x86_64__)
  targets.push_back({"llvm -mcpu=x86-64", 4});
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) targets.push_back({"llvm -mcpu=haswell", 8});
  if (__builtin_cpu_supports("avx512f")) targets.push_back({"llvm -mcpu=skylake-avx512", 16});
#endif
  return targets;
}

TEST(LayoutTransform, BothDirectionsMatchTheLayoutsOnEveryVectorWidth) {
  for (const auto& [target, widest] : HostTargets()) {
    for (int64_t block : {int64_t{4}, int64_t{8}, int64_t{16}}) {
      if (block > widest) continue;
      for (bool to_blocked : {false, true}) {
        // A plane of whole tiles, one ending in an overlapping tile, one of exactly one tile;
        // batches and several blocks.
        CheckTransform({1, block, 4, 8, block, to_blocked}, target, true);
        CheckTransform({2, 3 * block, 5, 7, block, to_blocked}, target, true);
        CheckTransform({1, 2 * block, 1, block, block, to_blocked}, target, true);
        CheckTransform({1, 2 * block, 56, 56, block, to_blocked}, target, true);  // parallel
      }
    }
  }
}

TEST(LayoutTransform, AnEpilogueOnTheBlockedSideRunsInRegisters) {
  for (const auto& [target, widest] : HostTargets()) {
    CheckTransform({2, 2 * widest, 3, 7, widest, true, true}, target, true);
  }
}

// A Flatten after the NCHW output keeps its elements in place: the transposes write it.
TEST(LayoutTransform, AFlattenedNchwOutputIsWrittenByTheTransposes) {
  for (const auto& [target, widest] : HostTargets()) {
    CheckTransform({2, 2 * widest, 4, 5, widest, false, false, true}, target, true);
  }
}

// A float16 model widens each tensor to float32 as the next node reads it: the tile's loads do,
// in both directions; integer sources too.
TEST(LayoutTransform, ACastToFloat32BeforeTheTransformWidensTheLoads) {
  for (const auto& [target, widest] : HostTargets()) {
    for (bool to_blocked : {false, true}) {
      CheckTransform({2, 2 * widest, 5, 7, widest, to_blocked, false, false, kFloat16}, target,
                     true);
      CheckTransform({1, widest, 4, 8, widest, to_blocked, false, false, kInt8}, target, true);
      CheckTransform({1, widest, 4, 8, widest, to_blocked, false, false, kUInt8}, target, true);
      CheckTransform({1, widest, 4, 8, widest, to_blocked, false, false, kInt32}, target, true);
    }
    CheckTransform({2, 2 * widest, 3, 7, widest, true, true, false, kFloat16}, target, true);
    CheckTransform({2, 2 * widest, 4, 5, widest, false, false, true, kFloat16}, target, true);
  }
}

// Left to the default schedule, and still right: an epilogue on the NCHW side, planes smaller than
// a block, blocks wider than the target's vectors.
TEST(LayoutTransform, TheDefaultScheduleKeepsWhatTheTransposeDoesNot) {
  for (const auto& [target, widest] : HostTargets()) {
    CheckTransform({1, 2 * widest, 3, 5, widest, false, true}, target, false);
    CheckTransform({1, 2 * widest, 1, 1, widest, false}, target, false);
    if (widest < 16) CheckTransform({1, 32, 4, 4, 16, false}, target, false);
  }
}

// The same loop nests compile for both ARM targets (NCHW4c: NEON's four lanes), a float16 source
// widened by the loads too.
TEST(LayoutTransform, CrossCompilesForAArch64AndArmv7) {
  for (const char* target :
       {"llvm -mtriple=aarch64-linux-gnu", "llvm -mtriple=armv7a-linux-gnueabihf -mattr=+neon"}) {
    for (DLDataType from : {kFloat32, kFloat16}) {
      SCOPED_TRACE(std::string(target) + " from " + DTypeToString(from));
      KernelGraph kg;
      int x = kg.Input("x", {1, 2, 5, 7, 4}, from);
      if (from != kFloat32) {
        x = kg.Add("Cast", {x}, {TensorType{{1, 2, 5, 7, 4}, kFloat32}}, {{"to", int64_t{1}}})[0];
      }
      AttrMap attrs{{kSrcLayoutAttr, std::string("NCHW4c")}, {kDstLayoutAttr, std::string("NCHW")}};
      int y = kg.Add("LayoutTransform", {x}, {TensorType{{1, 8, 5, 7}, kFloat32}}, attrs)[0];
      char tmpl[] = "/tmp/ember_layout_arm_XXXXXX";
      const std::string dir = mkdtemp(tmpl);
      BuildOptions bo;
      bo.dump_dir = dir;
      EXPECT_NO_THROW(testing::BuildWithStrategy({kg.Group("lt", {y})}, Target::Parse(target),
                                                 dir + "/lib.so", bo));
      EXPECT_NE(ReadFile(dir + "/kernels.loop.txt").find("shuffle("), std::string::npos);
      EXPECT_TRUE(std::filesystem::exists(dir + "/lib.so"));
      std::filesystem::remove_all(dir);
    }
  }
}

}  // namespace
}  // namespace ember::compiler
