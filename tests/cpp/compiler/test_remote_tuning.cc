// What emberc --tune --remote adds to the tuner, without a board: the board's CPU ends every
// workload key while its scope lasts, and a candidate's one-kernel artifact loads and runs in
// the runtime as ember-run on the board runs it.
#include <ember/compiler/ir/graph.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "../../../compiler/autotune/one_kernel_artifact.h"
#include "../../../compiler/schedule/tuning_board.h"
#include "artifact_runner.h"
#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

namespace fs = std::filesystem;
using testing::KernelGraph;

// A matrix product: the one-kernel artifact's test group.
struct DenseKernel {
  KernelGraph kg;
  int y = -1;
  DenseKernel() {
    int x = kg.Input("x", {2, 16});
    int w = kg.Input("w", {16, 8});
    y = kg.Add("MatMul", {x, w}, {TensorType{{2, 8}, kFloat32}})[0];
  }
  FusedGroup Group() const { return kg.Group("fused_matmul", {y}); }
};

std::vector<std::string> DescribedKeys(const FusedGroup& g) {
  testing::HostTuning tuning;
  lower::LowerGroup(g, tuning.Options());
  std::vector<std::string> keys;
  for (const auto& t : tuning.tasks) keys.push_back(t.key);
  return keys;
}

// A 3x3 convolution with bias and Relu: conv2d_nchw_wide describes it as a tunable workload
// (test_tuning.cc forces the same schedule).
struct ConvKernel {
  KernelGraph kg;
  int y = -1;
  ConvKernel() {
    int x = kg.Input("x", {1, 8, 10, 9});
    int w = kg.Input("w", {8, 8, 3, 3});
    int b = kg.Input("b", {8});
    AttrMap attrs{{"kernel_shape", std::vector<int64_t>{3, 3}},
                  {"strides", std::vector<int64_t>{1, 1}},
                  {"dilations", std::vector<int64_t>{1, 1}},
                  {"pads", std::vector<int64_t>{1, 1, 1, 1}},
                  {"group", int64_t{1}}};
    TensorType ot{{1, 8, 10, 9}, kFloat32};
    int c = kg.Add("Conv", {x, w, b}, {ot}, attrs)[0];
    y = kg.Add("Relu", {c}, {ot})[0];
  }
  FusedGroup Group() const { return kg.Group("conv_relu", {y}); }
};

TEST(TuningBoard, TheBoardsCpuEndsEveryKeyWhileItsScopeLasts) {
  testing::ScopedEnv force("EMBER_SCHEDULE", "conv2d_nchw_wide_avx2");
  ConvKernel dk;
  std::vector<std::string> plain = DescribedKeys(dk.Group());
  ASSERT_FALSE(plain.empty()) << "the dense schedule describes no workload on this host";
  for (const std::string& k : plain) EXPECT_EQ(k.find(" board="), std::string::npos) << k;
  {
    schedule::ScopedTuningBoard board("impl=0x41 arch=8 var=0x0 part=0xd08 rev=3");
    for (const std::string& k : DescribedKeys(dk.Group())) {
      EXPECT_NE(k.find(" board=impl=0x41 arch=8 var=0x0 part=0xd08 rev=3"), std::string::npos) << k;
    }
  }
  EXPECT_EQ(DescribedKeys(dk.Group()), plain);
}

TEST(OneKernelArtifact, LoadsAndRunsLikeTheKernel) {
  DenseKernel dk;
  FusedGroup g = dk.Group();
  fs::path dir = fs::path(::testing::TempDir()) / "ember_one_kernel";
  fs::remove_all(dir);
  fs::create_directories(dir);
  testing::BuildWithStrategy({g}, Target::Host(), (dir / "lib.so").string());
  autotune::WriteOneKernelArtifact(g, dir.string());

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(32), w(128);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  std::vector<std::vector<float>> outs =
      testing::RunArtifact(dir.string(), {{"arg0", {2, 16}, x}, {"arg1", {16, 8}, w}});
  ASSERT_EQ(outs.size(), 1u);
  ASSERT_EQ(outs[0].size(), 16u);
  for (int r = 0; r < 2; ++r) {
    for (int c = 0; c < 8; ++c) {
      float acc = 0;
      for (int k = 0; k < 16; ++k) acc += x[r * 16 + k] * w[k * 8 + c];
      EXPECT_NEAR(outs[0][r * 8 + c], acc, 1e-4) << r << "," << c;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember::compiler
