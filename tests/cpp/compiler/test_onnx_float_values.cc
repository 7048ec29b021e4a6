// Float32Values reads a float32 TensorProto for the validator and `emberc quantize`: a payload
// that does not hold what the dims say is refused naming the tensor, before anything of the
// dims' size is allocated.
#include <ember/compiler/ir/tensor_type.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "../../../compiler/frontend/onnx/onnx_float_values.h"

namespace ember {
namespace compiler {
namespace {

onnx::TensorProto FloatTensor(const std::string& name, std::initializer_list<int64_t> dims) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  return t;
}

std::string ErrorOf(const onnx::TensorProto& t) {
  try {
    Float32Values(t);
  } catch (const CompileError& e) {
    return e.what();
  }
  return "";
}

TEST(OnnxFloatValues, ReadsRawDataAndFloatData) {
  onnx::TensorProto listed = FloatTensor("w", {2, 2});
  for (float f : {1.f, -2.f, 3.5f, 0.f}) listed.add_float_data(f);
  EXPECT_EQ(Float32Values(listed), (std::vector<float>{1.f, -2.f, 3.5f, 0.f}));

  onnx::TensorProto raw = FloatTensor("r", {3});
  const float values[3] = {0.25f, 7.f, -1.f};
  raw.set_raw_data(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  EXPECT_EQ(Float32Values(raw), (std::vector<float>{0.25f, 7.f, -1.f}));

  EXPECT_TRUE(Float32Values(FloatTensor("empty", {0, 5})).empty());
}

TEST(OnnxFloatValues, APayloadOtherThanTheDimsSayIsRefusedNamingTheTensor) {
  onnx::TensorProto short_list = FloatTensor("scales", {4});
  short_list.add_float_data(1.f);
  EXPECT_NE(ErrorOf(short_list).find("'scales' holds 1 values, its dims [4]"), std::string::npos)
      << ErrorOf(short_list);

  onnx::TensorProto odd_bytes = FloatTensor("b", {1});
  odd_bytes.set_raw_data(std::string(5, '\0'));
  EXPECT_NE(ErrorOf(odd_bytes).find("'b' holds 5 bytes"), std::string::npos);

  onnx::TensorProto negative = FloatTensor("n", {-1, -4});
  negative.set_raw_data(std::string(16, '\0'));
  EXPECT_NE(ErrorOf(negative).find("'n'"), std::string::npos);
}

TEST(OnnxFloatValues, HugeDimsWithASmallPayloadAreRefusedWithoutOverflowOrAllocation) {
  // 2^62 * 2^62 would overflow int64 and a vector of 2^62 floats cannot be made.
  onnx::TensorProto t = FloatTensor("huge", {int64_t{1} << 62, int64_t{1} << 62, 0});
  t.set_raw_data(std::string(8, '\0'));
  EXPECT_NE(ErrorOf(t).find("'huge' holds 8 bytes"), std::string::npos) << ErrorOf(t);
}

TEST(OnnxFloatValues, AnotherElementTypeIsRefused) {
  onnx::TensorProto t = FloatTensor("i", {2});
  t.set_data_type(onnx::TensorProto::INT64);
  t.add_int64_data(1);
  t.add_int64_data(2);
  EXPECT_NE(ErrorOf(t).find("'i' must be float32"), std::string::npos);
}

}  // namespace
}  // namespace compiler
}  // namespace ember
