// emberc end to end: ONNX models built in memory -> Compile() -> LoadArtifact -> run -> compare
// with a plain C++ reference.
#include <ember/compiler/driver.h>
#include <ember/runtime/graph_executor.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include "../compiler/onnx_builder.h"

namespace {

namespace fs = std::filesystem;
namespace rt = ember::runtime;
using ember::testing::OnnxBuilder;

class CompileAndRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ember_integration_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes the model, compiles it, returns a ready executor.
  rt::Module Build(const std::string& bytes, int opt_level = 3) {
    std::string model = (dir_ / "model.onnx").string();
    std::ofstream(model, std::ios::binary) << bytes;
    ember::compiler::CompileOptions opt;
    opt.model_path = model;
    opt.out_dir = (dir_ / "art").string();
    opt.opt_level = opt_level;
    ember::compiler::Compile(opt);
    EXPECT_TRUE(fs::exists(dir_ / "art" / "graph.json"));
    EXPECT_TRUE(fs::exists(dir_ / "art" / "params.bin"));
    return rt::LoadArtifact(opt.out_dir).GetFunction("default")(rt::kCPU);
  }

  static rt::NDArray Floats(std::vector<int64_t> shape, const std::vector<float>& v) {
    rt::NDArray a = rt::NDArray::Empty(rt::ShapeTuple(shape), rt::kFloat32, rt::kCPU);
    a.CopyFromBytes(v.data(), v.size() * sizeof(float));
    return a;
  }
  static std::vector<float> Values(const rt::NDArray& a) {
    std::vector<float> v(static_cast<size_t>(a.NumElements()));
    a.CopyToBytes(v.data(), v.size() * sizeof(float));
    return v;
  }
  static void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-4 + 1e-3 * std::fabs(want[i])) << "element " << i;
    }
  }

  fs::path dir_;
};

std::vector<float> Ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = offset + scale * static_cast<float>(i % 7) - 0.1f * (i % 3);
  return v;
}

// Conv3x3(pad 1) -> BatchNorm -> Relu -> Add(residual x): BN folding + a fused epilogue.
TEST_F(CompileAndRun, ConvBatchNormReluResidual) {
  const int64_t C = 2, H = 4, W = 4;
  std::vector<float> w = Ramp(C * C * 9, 0.1f, -0.3f);
  std::vector<float> gamma{1.5f, 0.5f}, beta{0.1f, -0.2f}, mean{0.05f, -0.1f}, var{0.9f, 1.2f};
  OnnxBuilder b;
  b.Input("x", {1, C, H, W}).Output("y", {1, C, H, W});
  b.FloatInit("w", {C, C, 3, 3}, w).FloatInit("gamma", {C}, gamma).FloatInit("beta", {C}, beta);
  b.FloatInit("mean", {C}, mean).FloatInit("var", {C}, var);
  auto* conv = b.Node("Conv", "conv", {"x", "w"}, {"c"});
  OnnxBuilder::IntsAttr(conv, "pads", {1, 1, 1, 1});
  b.Node("BatchNormalization", "bn", {"c", "gamma", "beta", "mean", "var"}, {"n"});
  b.Node("Relu", "relu", {"n"}, {"r"});
  b.Node("Add", "res", {"r", "x"}, {"y"});
  std::vector<float> x = Ramp(C * H * W, 0.25f, -0.5f);

  std::vector<float> want(x.size());
  for (int64_t o = 0; o < C; ++o) {
    for (int64_t i = 0; i < H; ++i) {
      for (int64_t j = 0; j < W; ++j) {
        double acc = 0;
        for (int64_t c = 0; c < C; ++c) {
          for (int64_t ki = 0; ki < 3; ++ki) {
            for (int64_t kj = 0; kj < 3; ++kj) {
              int64_t ii = i + ki - 1, jj = j + kj - 1;
              if (ii < 0 || jj < 0 || ii >= H || jj >= W) continue;
              acc += x[(c * H + ii) * W + jj] * w[((o * C + c) * 3 + ki) * 3 + kj];
            }
          }
        }
        double bn = (acc - mean[o]) / std::sqrt(var[o] + 1e-5) * gamma[o] + beta[o];
        size_t k = static_cast<size_t>((o * H + i) * W + j);
        want[k] = static_cast<float>(std::max(bn, 0.0) + x[k]);
      }
    }
  }
  for (int level : {0, 3}) {
    rt::Module gmod = Build(b.Bytes(), level);
    gmod.GetFunction("set_input")("x", Floats({1, C, H, W}, x));
    gmod.GetFunction("run")();
    ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);
  }
}

// One ConvTranspose configuration (2-D, square input of `in` pixels).
struct ConvT {
  int64_t cin, cout, in, k, stride, pad_begin, pad_end, out_pad, dilation, group;
};

// ConvTranspose's definition: each input pixel scatters its kernel-weighted value into the output.
std::vector<float> ConvTransposeRef(const ConvT& t, const std::vector<float>& x,
                                    const std::vector<float>& w, const std::vector<float>& bias) {
  const int64_t out =
      t.stride * (t.in - 1) + t.out_pad + (t.k - 1) * t.dilation + 1 - t.pad_begin - t.pad_end;
  const int64_t cin_g = t.cin / t.group, cout_g = t.cout / t.group;
  std::vector<double> y(static_cast<size_t>(t.cout * out * out));
  for (int64_t o = 0; o < t.cout; ++o) {
    for (int64_t p = 0; p < out * out; ++p) y[o * out * out + p] = bias[o];
  }
  for (int64_t c = 0; c < t.cin; ++c) {
    const int64_t g = c / cin_g;
    for (int64_t i = 0; i < t.in * t.in; ++i) {
      for (int64_t oc = 0; oc < cout_g; ++oc) {
        for (int64_t ki = 0; ki < t.k * t.k; ++ki) {
          const int64_t r = i / t.in * t.stride + ki / t.k * t.dilation - t.pad_begin;
          const int64_t q = i % t.in * t.stride + ki % t.k * t.dilation - t.pad_begin;
          if (r < 0 || q < 0 || r >= out || q >= out) continue;
          y[((g * cout_g + oc) * out + r) * out + q] +=
              double{x[c * t.in * t.in + i]} * w[(c * cout_g + oc) * t.k * t.k + ki];
        }
      }
    }
  }
  return std::vector<float>(y.begin(), y.end());
}

// ConvTranspose -> per-channel Mul -> Relu, with the weight a constant (compiled as a Conv over
// its phases and a PhaseInterleave, the Mul folded into the Conv) and a run-time input (the
// direct lowering): both must give ConvTranspose's definition.
TEST_F(CompileAndRun, ConvTransposeAsConvMatchesTheDefinition) {
  const std::vector<ConvT> cases = {
      {4, 6, 5, 2, 2, 0, 0, 0, 1, 1},   // DBNet's 2x2 stride 2: a 1x1 conv over four phases
      {4, 6, 5, 3, 2, 1, 1, 1, 1, 1},   // longer than the stride: zero taps in some phases
      {6, 4, 4, 4, 2, 1, 2, 0, 1, 2},   // groups, asymmetric pads
      {4, 4, 5, 4, 2, 1, 1, 0, 1, 4},   // depthwise
      {3, 5, 4, 3, 3, 2, 0, 2, 2, 1},   // dilated, stride 3, output_padding 2
      {4, 4, 6, 3, 1, 1, 1, 0, 1, 1},   // stride 1: one phase, the crop in the conv's pads
      {2, 3, 4, 1, 2, 0, 0, 1, 1, 1},   // a kernel shorter than the stride
      {8, 16, 6, 4, 2, 1, 1, 0, 1, 1},  // 16 channels a phase: the interleave runs blocked
  };
  for (const ConvT& t : cases) {
    SCOPED_TRACE("k" + std::to_string(t.k) + " s" + std::to_string(t.stride) + " group " +
                 std::to_string(t.group) + " dilation " + std::to_string(t.dilation));
    const int64_t out =
        t.stride * (t.in - 1) + t.out_pad + (t.k - 1) * t.dilation + 1 - t.pad_begin - t.pad_end;
    std::vector<float> x = Ramp(t.cin * t.in * t.in, 0.25f, -0.6f);
    std::vector<float> w = Ramp(t.cin * t.cout / t.group * t.k * t.k, 0.15f, -0.4f);
    std::vector<float> bias = Ramp(t.cout, 0.2f, -0.3f), scale = Ramp(t.cout, 0.3f, -0.7f);
    std::vector<float> want = ConvTransposeRef(t, x, w, bias);
    for (size_t i = 0; i < want.size(); ++i) {
      want[i] = std::max(want[i] * scale[i / static_cast<size_t>(out * out)], 0.0f);
    }
    for (bool constant_weight : {true, false}) {
      OnnxBuilder b;
      b.Input("x", {1, t.cin, t.in, t.in}).Output("y", {1, t.cout, out, out});
      const std::vector<int64_t> w_shape{t.cin, t.cout / t.group, t.k, t.k};
      if (constant_weight) {
        b.FloatInit("w", w_shape, w);
      } else {
        b.Input("w", w_shape);
      }
      b.FloatInit("bias", {t.cout}, bias).FloatInit("scale", {t.cout, 1, 1}, scale);
      auto* ct = b.Node("ConvTranspose", "convt", {"x", "w", "bias"}, {"c"});
      OnnxBuilder::IntsAttr(ct, "kernel_shape", {t.k, t.k});
      OnnxBuilder::IntsAttr(ct, "strides", {t.stride, t.stride});
      OnnxBuilder::IntsAttr(ct, "pads", {t.pad_begin, t.pad_begin, t.pad_end, t.pad_end});
      OnnxBuilder::IntsAttr(ct, "output_padding", {t.out_pad, t.out_pad});
      OnnxBuilder::IntsAttr(ct, "dilations", {t.dilation, t.dilation});
      OnnxBuilder::IntAttr(ct, "group", t.group);
      b.Node("Mul", "scale", {"c", "scale"}, {"m"});
      b.Node("Relu", "relu", {"m"}, {"y"});
      rt::Module gmod = Build(b.Bytes());
      gmod.GetFunction("set_input")("x", Floats({1, t.cin, t.in, t.in}, x));
      if (!constant_weight) gmod.GetFunction("set_input")("w", Floats(w_shape, w));
      gmod.GetFunction("run")();
      ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);
    }
  }
}

// Gemm + Softmax, a second output that is an exporter-style reshape of the input, and a third that
// is the graph input itself (copy kernel).
TEST_F(CompileAndRun, GemmSoftmaxAndShapeMathOutputs) {
  OnnxBuilder b;
  b.Input("x", {2, 3}).Output("p", {2, 2}).Output("flat", {6}).Output("same", {2, 3});
  std::vector<float> w{0.5f, -1, 0.25f, 1, 2, -0.5f}, bias{0.1f, -0.1f};
  b.FloatInit("w", {2, 3}, w).FloatInit("bias", {2}, bias).IntInit("m1", {1}, {-1});
  auto* gemm = b.Node("Gemm", "gemm", {"x", "w", "bias"}, {"g"});
  OnnxBuilder::IntAttr(gemm, "transB", 1);
  OnnxBuilder::IntAttr(b.Node("Softmax", "sm", {"g"}, {"p"}), "axis", 1);
  b.Node("Shape", "shape", {"x"}, {"s"});
  b.Node("ReduceProd", "prod", {"s"}, {"n"});
  b.Node("Reshape", "flatten", {"x", "m1"}, {"flat"});
  b.Node("Identity", "id", {"x"}, {"same"});
  std::vector<float> x{1, 2, 3, -1, 0.5f, 2};
  rt::Module gmod = Build(b.Bytes());
  gmod.GetFunction("set_input")("x", Floats({2, 3}, x));
  gmod.GetFunction("run")();
  std::vector<float> want;
  for (int r = 0; r < 2; ++r) {
    double z[2];
    for (int o = 0; o < 2; ++o) {
      z[o] = bias[o];
      for (int k = 0; k < 3; ++k) z[o] += x[r * 3 + k] * w[o * 3 + k];
    }
    double m = std::max(z[0], z[1]);
    double e0 = std::exp(z[0] - m), e1 = std::exp(z[1] - m);
    want.push_back(static_cast<float>(e0 / (e0 + e1)));
    want.push_back(static_cast<float>(e1 / (e0 + e1)));
  }
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);
  ExpectNear(Values(gmod.GetFunction("get_output")(1)), x);
  ExpectNear(Values(gmod.GetFunction("get_output")(2)), x);
}

// A transformer-style projection: [2][9][40] x constant [40][70] + bias -> Relu. emberc turns it
// into Reshape - Gemm over 18 rows (weights packed in panels where the host's dense kernel tiles
// them) - Reshape, with the bias and Relu after.
TEST_F(CompileAndRun, BatchedMatMulWithConstantWeight) {
  constexpr int64_t kB = 2, kS = 9, kK = 40, kN = 70;
  OnnxBuilder b;
  b.Input("x", {kB, kS, kK}).Output("y", {kB, kS, kN});
  std::vector<float> w = Ramp(kK * kN, 0.05f, -0.1f), bias = Ramp(kN, 0.1f, -0.3f);
  b.FloatInit("w", {kK, kN}, w).FloatInit("bias", {kN}, bias);
  b.Node("MatMul", "proj", {"x", "w"}, {"m"});
  b.Node("Add", "add", {"m", "bias"}, {"a"});
  b.Node("Relu", "relu", {"a"}, {"y"});
  std::vector<float> x = Ramp(kB * kS * kK, 0.3f, -0.9f);
  rt::Module gmod = Build(b.Bytes());
  gmod.GetFunction("set_input")("x", Floats({kB, kS, kK}, x));
  gmod.GetFunction("run")();
  std::vector<float> want;
  for (int64_t r = 0; r < kB * kS; ++r) {
    for (int64_t c = 0; c < kN; ++c) {
      double acc = bias[c];
      for (int64_t k = 0; k < kK; ++k) acc += double{x[r * kK + k]} * w[k * kN + c];
      want.push_back(static_cast<float>(std::max(acc, 0.0)));
    }
  }
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);
}

TEST_F(CompileAndRun, GatherRefusesARunTimeIndexOutOfRange) {
  OnnxBuilder b;
  b.Input("x", {3, 4}).Input("rows", {2}, onnx::TensorProto::INT64).Output("y", {2, 4});
  OnnxBuilder::IntAttr(b.Node("Gather", "pick", {"x", "rows"}, {"y"}), "axis", 0);
  rt::Module gmod = Build(b.Bytes());
  std::vector<float> x = Ramp(12, 1.0f, 0.0f);
  gmod.GetFunction("set_input")("x", Floats({3, 4}, x));
  auto rows = [](std::vector<int64_t> v) {
    rt::NDArray a = rt::NDArray::Empty(rt::ShapeTuple({2}), rt::kInt64, rt::kCPU);
    a.CopyFromBytes(v.data(), v.size() * sizeof(int64_t));
    return a;
  };
  gmod.GetFunction("set_input")("rows", rows({2, -3}));  // -3 is row 0
  gmod.GetFunction("run")();
  std::vector<float> want(x.begin() + 8, x.end());
  want.insert(want.end(), x.begin(), x.begin() + 4);
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);

  gmod.GetFunction("set_input")("rows", rows({1, 1000000}));
  try {
    gmod.GetFunction("run")();
    FAIL() << "an index out of range ran (it used to return the clamped last row)";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'pick' (Gather): indices 'rows' hold an index "
                                         "outside -3..2 (axis 0 has size 3): 1000000"),
              std::string::npos)
        << e.what();
  }
}

rt::NDArray Int64s(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  rt::NDArray a = rt::NDArray::Empty(rt::ShapeTuple(shape), rt::kInt64, rt::kCPU);
  a.CopyFromBytes(v.data(), v.size() * sizeof(int64_t));
  return a;
}

std::vector<int64_t> Int64Values(const rt::NDArray& a) {
  std::vector<int64_t> v(static_cast<size_t>(a.NumElements()));
  a.CopyToBytes(v.data(), v.size() * sizeof(int64_t));
  return v;
}

std::string RunError(rt::Module& gmod) {
  try {
    gmod.GetFunction("run")();
  } catch (const rt::Error& e) {
    return e.what();
  }
  return "(it ran)";
}

// Each component of an index tuple is checked against the axis it indexes: 4 is a valid column
// of a 3 x 5 tensor but not a valid row.
TEST_F(CompileAndRun, GatherNdAndScatterNdCheckEachComponentOfARunTimeIndex) {
  OnnxBuilder b;
  b.Input("x", {3, 5}).Input("at", {2, 2}, onnx::TensorProto::INT64).Input("u", {2});
  b.Output("picked", {2}).Output("scattered", {3, 5});
  b.Node("GatherND", "pick", {"x", "at"}, {"picked"});
  b.Node("ScatterND", "put", {"x", "at", "u"}, {"scattered"});
  rt::Module gmod = Build(b.Bytes());
  std::vector<float> x = Ramp(15, 1.0f, 0.0f);
  gmod.GetFunction("set_input")("x", Floats({3, 5}, x));
  gmod.GetFunction("set_input")("u", Floats({2}, {-7.0f, -8.0f}));
  gmod.GetFunction("set_input")("at", Int64s({2, 2}, {2, 4, -3, -1}));  // (2, 4), (0, 4)
  gmod.GetFunction("run")();
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), {x[14], x[4]});
  std::vector<float> scattered = x;
  scattered[14] = -7.0f;
  scattered[4] = -8.0f;
  ExpectNear(Values(gmod.GetFunction("get_output")(1)), scattered);

  gmod.GetFunction("set_input")("at", Int64s({2, 2}, {4, 1, 0, 0}));
  EXPECT_NE(RunError(gmod).find("indices 'at' hold an index outside -3..2 (axis 0 has size 3): 4"),
            std::string::npos)
      << RunError(gmod);
  gmod.GetFunction("set_input")("at", Int64s({2, 2}, {0, 1, 0, -6}));
  EXPECT_NE(RunError(gmod).find("indices 'at' hold an index outside -5..4 (axis 1 has size 5): -6"),
            std::string::npos)
      << RunError(gmod);
}

// Lengths and flat positions do not count from the end: -1 is refused like one past the end.
TEST_F(CompileAndRun, ReverseSequenceLengthsAndUnpoolPositionsAreCheckedAtRunTime) {
  OnnxBuilder b(11);
  b.Input("seq", {4, 2, 3}).Input("lens", {2}, onnx::TensorProto::INT64).Output("rev", {4, 2, 3});
  b.Input("v", {1, 1, 2, 2}).Input("at", {1, 1, 2, 2}, onnx::TensorProto::INT64);
  b.Output("up", {1, 1, 4, 4});
  auto* rev = b.Node("ReverseSequence", "rev", {"seq", "lens"}, {"rev"});
  OnnxBuilder::IntAttr(rev, "time_axis", 0);
  OnnxBuilder::IntAttr(rev, "batch_axis", 1);
  auto* up = b.Node("MaxUnpool", "up", {"v", "at"}, {"up"});
  OnnxBuilder::IntsAttr(up, "kernel_shape", {2, 2});
  OnnxBuilder::IntsAttr(up, "strides", {2, 2});
  rt::Module gmod = Build(b.Bytes());
  std::vector<float> seq = Ramp(24, 1.0f, 0.0f);
  gmod.GetFunction("set_input")("seq", Floats({4, 2, 3}, seq));
  gmod.GetFunction("set_input")("v", Floats({1, 1, 2, 2}, {5, 6, 7, 8}));
  gmod.GetFunction("set_input")("lens", Int64s({2}, {3, 0}));
  gmod.GetFunction("set_input")("at", Int64s({1, 1, 2, 2}, {5, 7, 13, 15}));
  gmod.GetFunction("run")();
  std::vector<float> want = seq;  // batch 0: steps 0..2 reversed; batch 1 as it is
  for (int t = 0; t < 3; ++t) {
    for (int c = 0; c < 3; ++c) want[(t * 2) * 3 + c] = seq[((2 - t) * 2) * 3 + c];
  }
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);
  std::vector<float> unpooled(16, 0.0f);
  unpooled[5] = 5, unpooled[7] = 6, unpooled[13] = 7, unpooled[15] = 8;
  ExpectNear(Values(gmod.GetFunction("get_output")(1)), unpooled);

  gmod.GetFunction("set_input")("lens", Int64s({2}, {3, -1}));
  EXPECT_NE(
      RunError(gmod).find("sequence_lens 'lens' hold a length outside 0..4 (time axis 0): -1"),
      std::string::npos)
      << RunError(gmod);
  gmod.GetFunction("set_input")("lens", Int64s({2}, {3, 4}));
  gmod.GetFunction("set_input")("at", Int64s({1, 1, 2, 2}, {5, 7, 13, -1}));
  EXPECT_NE(RunError(gmod).find("indices 'at' hold a position outside 0..15"), std::string::npos)
      << RunError(gmod);
}

// TopK keeps the k best in order, the lower index first among equals; an indices output that
// nothing reads goes to workspace memory.
TEST_F(CompileAndRun, TopKOrdersTiesByIndexAndMayDropItsIndices) {
  OnnxBuilder b;
  b.Input("x", {2, 6}).Output("top", {2, 4}).Output("top_at", {2, 4}, onnx::TensorProto::INT64);
  b.Output("low", {2, 3});
  b.IntInit("k4", {1}, {4}).IntInit("k3", {1}, {3});
  b.Node("TopK", "top", {"x", "k4"}, {"top", "top_at"});
  auto* low = b.Node("TopK", "low", {"x", "k3"}, {"low", "low_at"});
  OnnxBuilder::IntAttr(low, "largest", 0);
  rt::Module gmod = Build(b.Bytes());
  gmod.GetFunction("set_input")("x", Floats({2, 6}, {3, 1, 3, 2, 5, 1, 0, 0, 9, 0, 9, 0}));
  gmod.GetFunction("run")();
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), {5, 3, 3, 2, 9, 9, 0, 0});
  EXPECT_EQ(Int64Values(gmod.GetFunction("get_output")(1)),
            (std::vector<int64_t>{4, 0, 2, 3, 2, 4, 0, 1}));
  ExpectNear(Values(gmod.GetFunction("get_output")(2)), {1, 1, 2, 0, 0, 0});
}

TEST_F(CompileAndRun, ErrorsNameTheProblem) {
  ember::compiler::CompileOptions opt;
  opt.model_path = (dir_ / "missing.onnx").string();
  opt.out_dir = (dir_ / "art").string();
  try {
    ember::compiler::Compile(opt);
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("missing.onnx: cannot open file"), std::string::npos)
        << e.what();
  }
}

}  // namespace
