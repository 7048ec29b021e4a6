// emberc --jobs: the artifact is the same for every thread count, a model with repeated blocks
// runs correctly with its kernels shared, and bad counts are refused in one line.
#include <ember/runtime/graph_executor.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../compiler/onnx_builder.h"

namespace {

namespace fs = std::filesystem;
namespace rt = ember::runtime;
using ember::testing::OnnxBuilder;

constexpr int64_t kC = 8, kH = 6, kW = 6;

std::vector<float> Ramp(int64_t n, float scale, float offset) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>((i * 7) % 13) / 13;
  return v;
}

// Two 1x1 Conv + Relu blocks of the same shape: the fused groups are structurally identical.
std::string RepeatedBlocks(const std::vector<float>& w1, const std::vector<float>& w2) {
  OnnxBuilder b;
  b.Input("x", {1, kC, kH, kW}).Output("y", {1, kC, kH, kW});
  b.FloatInit("w1", {kC, kC, 1, 1}, w1).FloatInit("w2", {kC, kC, 1, 1}, w2);
  b.Node("Conv", "conv1", {"x", "w1"}, {"c1"});
  b.Node("Relu", "relu1", {"c1"}, {"r1"});
  b.Node("Conv", "conv2", {"r1", "w2"}, {"c2"});
  b.Node("Relu", "relu2", {"c2"}, {"y"});
  return b.Bytes();
}

std::vector<float> ConvRelu(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<float> y(x.size());
  for (int64_t o = 0; o < kC; ++o) {
    for (int64_t p = 0; p < kH * kW; ++p) {
      double acc = 0;
      for (int64_t c = 0; c < kC; ++c) acc += w[o * kC + c] * x[c * kH * kW + p];
      y[o * kH * kW + p] = static_cast<float>(std::max(acc, 0.0));
    }
  }
  return y;
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// Runs emberc with args; returns its exit status and stderr.
std::pair<int, std::string> Emberc(const std::string& args, const fs::path& dir) {
  std::string err_file = (dir / "stderr.txt").string();
  std::string cmd = std::string(EMBERC_BINARY) + " " + args + " >/dev/null 2>" + err_file;
  int rc = std::system(cmd.c_str());
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, ReadBytes(err_file)};
}

class EmbercJobs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ember_jobs_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(EmbercJobs, ArtifactIsTheSameForEveryJobCountAndSharedKernelsRunCorrectly) {
  std::vector<float> w1 = Ramp(kC * kC, 1.0f, -0.4f), w2 = Ramp(kC * kC, 0.8f, -0.3f);
  std::string model = (dir_ / "model.onnx").string();
  std::ofstream(model, std::ios::binary) << RepeatedBlocks(w1, w2);
  for (const char* jobs : {"1", "2", "3"}) {
    auto [rc, err] = Emberc(
        "compile " + model + " -o " + (dir_ / jobs).string() + " --jobs " + jobs + " -v", dir_);
    ASSERT_EQ(rc, 0) << err;
    EXPECT_NE(err.find(" threads"), std::string::npos) << "-v names the threads used: " << err;
  }
  for (const char* file : {"lib.so", "graph.json", "params.bin"}) {
    std::string one = ReadBytes(dir_ / "1" / file);
    EXPECT_FALSE(one.empty()) << file;
    EXPECT_EQ(ReadBytes(dir_ / "2" / file), one) << file << " differs between --jobs 1 and 2";
    EXPECT_EQ(ReadBytes(dir_ / "3" / file), one) << file << " differs between --jobs 1 and 3";
  }
  std::vector<float> x = Ramp(kC * kH * kW, 2.0f, -1.0f);
  std::vector<float> want = ConvRelu(ConvRelu(x, w1), w2);
  rt::Module gmod = rt::LoadArtifact((dir_ / "2").string()).GetFunction("default")(rt::kCPU);
  rt::NDArray in = rt::NDArray::Empty(rt::ShapeTuple({1, kC, kH, kW}), rt::kFloat32, rt::kCPU);
  in.CopyFromBytes(x.data(), x.size() * sizeof(float));
  gmod.GetFunction("set_input")("x", in);
  gmod.GetFunction("run")();
  rt::NDArray out = gmod.GetFunction("get_output")(0);
  std::vector<float> got(want.size());
  out.CopyToBytes(got.data(), got.size() * sizeof(float));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-3 * std::fabs(want[i])) << "element " << i;
  }
}

TEST_F(EmbercJobs, BadJobCountsAreRefusedInOneLine) {
  for (const char* bad : {"0", "-2", "two", "", "99999"}) {
    auto [rc, err] = Emberc(std::string("compile m.onnx -o out --jobs '") + bad + "'", dir_);
    EXPECT_NE(rc, 0) << bad;
    EXPECT_NE(err.find("--jobs must be an integer in 1..9999, got '" + std::string(bad) + "'"),
              std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  auto [rc, err] = Emberc("compile m.onnx -o out --jobs", dir_);
  EXPECT_NE(rc, 0);
  EXPECT_NE(err.find("--jobs needs a value"), std::string::npos) << err;
}

}  // namespace
