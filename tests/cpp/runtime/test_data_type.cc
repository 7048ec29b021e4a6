#include <ember/runtime/data_type.h>
#include <ember/runtime/logging.h>
#include <gtest/gtest.h>

#include <string>

namespace ember::runtime {
namespace {

TEST(DataType, ParsesAndPrintsRoundTrip) {
  struct Case {
    const char* text;
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
  };
  const Case cases[] = {
      {"float32", kDLFloat, 32, 1},   {"float16", kDLFloat, 16, 1},
      {"float64", kDLFloat, 64, 1},   {"int8", kDLInt, 8, 1},
      {"int32", kDLInt, 32, 1},       {"int64", kDLInt, 64, 1},
      {"uint8", kDLUInt, 8, 1},       {"bool", kDLUInt, 1, 1},
      {"float32x4", kDLFloat, 32, 4}, {"handle", kDLOpaqueHandle, 64, 1},
      {"bfloat16", kDLBfloat, 16, 1},
  };
  for (const Case& c : cases) {
    DLDataType t = StringToDLDataType(c.text);
    EXPECT_EQ(t.code, c.code) << c.text;
    EXPECT_EQ(t.bits, c.bits) << c.text;
    EXPECT_EQ(t.lanes, c.lanes) << c.text;
    EXPECT_EQ(DLDataTypeToString(t), c.text);
  }
  EXPECT_EQ(StringToDLDataType("uint1"), kBool);
  EXPECT_EQ(DataTypeBytes(kFloat32), 4u);
  EXPECT_EQ(DataTypeBytes(StringToDLDataType("float32x4")), 16u);
}

TEST(DataType, RejectsUnknownWithClearMessage) {
  for (const char* bad : {"", "float", "float33", "int7x", "floaty32", "int-8", "complex64",
                          "float32x0", "int99999999999"}) {
    try {
      StringToDLDataType(bad);
      FAIL() << "accepted " << bad;
    } catch (const Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("\"") + bad + "\""), std::string::npos) << msg;
      EXPECT_NE(msg.find("float32x4"), std::string::npos) << msg;
    }
  }
}

TEST(DataType, DevicePrints) {
  EXPECT_EQ(DeviceToString(kCPU), "cpu(0)");
  EXPECT_TRUE(kCPU == (DLDevice{kDLCPU, 0}));
  EXPECT_TRUE(kCPU != (DLDevice{kDLCPU, 1}));
}

}  // namespace
}  // namespace ember::runtime
