// The scale / zero-point arithmetic of `emberc quantize` (include/ember/compiler/quantize.h).
#include <ember/compiler/quantize.h>
#include <gtest/gtest.h>

#include <cmath>

namespace ember {
namespace compiler {
namespace {

TEST(QuantMath, RoundsHalfToEven) {
  EXPECT_EQ(RoundHalfToEven(0.5), 0.0);
  EXPECT_EQ(RoundHalfToEven(1.5), 2.0);
  EXPECT_EQ(RoundHalfToEven(2.5), 2.0);
  EXPECT_EQ(RoundHalfToEven(-0.5), 0.0);
  EXPECT_EQ(RoundHalfToEven(-1.5), -2.0);
  EXPECT_EQ(RoundHalfToEven(-2.5), -2.0);
  EXPECT_EQ(RoundHalfToEven(2.4999), 2.0);
  // QuantizeValue rounds the same way: 2.5 steps goes to 2, 3.5 to 4.
  const QuantParams q{1.0f, 10};
  EXPECT_EQ(QuantizeValue(2.5f, q, 0, 255), 12);
  EXPECT_EQ(QuantizeValue(3.5f, q, 0, 255), 14);
  EXPECT_EQ(QuantizeValue(-2.5f, q, 0, 255), 8);
}

TEST(QuantMath, ActivationRangeHoldsZeroExactly) {
  // A range on one side of 0 is widened to hold it; 0 quantizes to the zero point and back.
  for (auto [lo, hi] : {std::pair<float, float>{-1.3f, 4.7f},
                        {0.2f, 6.0f},
                        {-5.0f, -0.1f},
                        {-0.001f, 1000.0f},
                        {-3.0f, 3.0f}}) {
    const QuantParams q = ActivationQuantParams(lo, hi);
    ASSERT_GE(q.zero_point, 0) << lo << " " << hi;
    ASSERT_LE(q.zero_point, 255) << lo << " " << hi;
    EXPECT_EQ(QuantizeValue(0.0f, q, 0, 255), q.zero_point);
    EXPECT_EQ((QuantizeValue(0.0f, q, 0, 255) - q.zero_point) * q.scale, 0.0f);
    // The ends of the (widened) range stay within half a step of representable values.
    const float rmin = std::min(lo, 0.0f), rmax = std::max(hi, 0.0f);
    EXPECT_NEAR((QuantizeValue(rmin, q, 0, 255) - q.zero_point) * q.scale, rmin, q.scale);
    EXPECT_NEAR((QuantizeValue(rmax, q, 0, 255) - q.zero_point) * q.scale, rmax, q.scale);
  }
  EXPECT_EQ(ActivationQuantParams(0.2f, 6.0f).zero_point, 0);
  EXPECT_FLOAT_EQ(ActivationQuantParams(0.2f, 6.0f).scale, 6.0f / 255);
  EXPECT_EQ(ActivationQuantParams(-5.0f, -0.1f).zero_point, 255);
  // -1 .. 1.55: scale 0.01, zero point 100 exactly.
  const QuantParams q = ActivationQuantParams(-1.0f, 1.55f);
  EXPECT_FLOAT_EQ(q.scale, 0.01f);
  EXPECT_EQ(q.zero_point, 100);
}

TEST(QuantMath, EmptyRangeIsScaleOne) {
  const QuantParams q = ActivationQuantParams(0.0f, 0.0f);
  EXPECT_EQ(q.scale, 1.0f);
  EXPECT_EQ(q.zero_point, 0);
  EXPECT_EQ(SymmetricWeightQuantParams(0.0f).scale, 1.0f);
}

TEST(QuantMath, SymmetricWeightsPerChannel) {
  // Each channel's largest magnitude maps to +-kWeightQMax, zero point 0, and saturation holds.
  for (float max_abs : {0.01f, 0.5f, 3.0f}) {
    const QuantParams q = SymmetricWeightQuantParams(max_abs);
    EXPECT_EQ(q.zero_point, 0);
    EXPECT_EQ(QuantizeValue(max_abs, q, -kWeightQMax, kWeightQMax), kWeightQMax);
    EXPECT_EQ(QuantizeValue(-max_abs, q, -kWeightQMax, kWeightQMax), -kWeightQMax);
    EXPECT_EQ(QuantizeValue(2 * max_abs, q, -kWeightQMax, kWeightQMax), kWeightQMax);
    EXPECT_EQ(QuantizeValue(0.0f, q, -kWeightQMax, kWeightQMax), 0);
  }
  EXPECT_EQ(kWeightQMax, 63);  // ORT's AVX2 u8 x s8 pair sums stay within int16
}

TEST(QuantMath, SaturatesAndIgnoresNan) {
  const QuantParams q{0.1f, 128};
  EXPECT_EQ(QuantizeValue(1e9f, q, 0, 255), 255);
  EXPECT_EQ(QuantizeValue(-1e9f, q, 0, 255), 0);
  EXPECT_EQ(QuantizeValue(std::nanf(""), q, 0, 255), 128);
}

TEST(QuantizeArgs, ParsesAndRefuses) {
  QuantizeOptions o = ParseQuantizeArgs({"m.onnx", "-o", "q.onnx", "--calibration", "cal",
                                         "--method", "percentile", "--exclude", "conv_1",
                                         "--per-tensor-weights", "--input-shape", "x=1,3,8,8"});
  EXPECT_EQ(o.model_path, "m.onnx");
  EXPECT_EQ(o.output_path, "q.onnx");
  EXPECT_EQ(o.method, CalibrationMethod::kPercentile);
  EXPECT_EQ(o.exclude, std::vector<std::string>{"conv_1"});
  EXPECT_TRUE(o.per_tensor_weights);
  EXPECT_EQ(o.input_shapes.at("x"), (std::vector<int64_t>{1, 3, 8, 8}));
  EXPECT_THROW(ParseQuantizeArgs({"m.onnx", "--method", "kl"}), std::exception);
  EXPECT_THROW(ParseQuantizeArgs({"m.onnx", "--bogus"}), std::exception);
  EXPECT_THROW(ParseQuantizeArgs({"-o", "q.onnx"}), std::exception);
}

}  // namespace
}  // namespace compiler
}  // namespace ember
