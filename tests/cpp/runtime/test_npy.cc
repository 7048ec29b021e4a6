// .npy reader and writer against numpy-written golden files (artifacts/npy/make_golden.py).
#include <ember/runtime/npy.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ember::runtime::LoadNpy;
using ember::runtime::NpyArray;
using ember::runtime::NpyError;
using ember::runtime::ParseNpy;
using ember::runtime::ParseNpyHeader;
using ember::runtime::ReadNpyHeader;
using ember::runtime::SaveNpy;
using ember::runtime::SerializeNpyHeader;

std::string GoldenDir() {
  std::string here = __FILE__;
  return here.substr(0, here.find_last_of('/')) + "/artifacts/npy/";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "ember_npy_" + std::to_string(::getpid()) + "_" + name;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

template <typename T>
std::vector<T> Values(const NpyArray& a) {
  std::vector<T> v(a.data.size() / sizeof(T));
  std::memcpy(v.data(), a.data.data(), v.size() * sizeof(T));
  return v;
}

// Expects loading \p bytes (as file \p name) to fail with a message containing each of \p parts.
void ExpectRefused(const std::string& name, const std::string& bytes,
                   const std::vector<std::string>& parts) {
  std::string path = TempPath(name);
  WriteFile(path, bytes);
  try {
    LoadNpy(path);
    ADD_FAILURE() << name << ": loaded, expected an error";
  } catch (const NpyError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
  // The in-memory parser must agree.
  EXPECT_THROW(ParseNpy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name),
               NpyError);
  std::remove(path.c_str());
}

std::string V1Header(const std::string& dict) {
  std::string h = "\x93NUMPY";
  h += '\x01';
  h += '\x00';
  h += static_cast<char>(dict.size() & 0xFF);
  h += static_cast<char>(dict.size() >> 8);
  return h + dict;
}

TEST(Npy, ReadsFloat32) {
  NpyArray a = LoadNpy(GoldenDir() + "f32_2x3.npy");
  EXPECT_EQ(a.dtype.code, kDLFloat);
  EXPECT_EQ(a.dtype.bits, 32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(Values<float>(a), (std::vector<float>{0, 1, 2, 3, 4, 5}));
}

TEST(Npy, ReadsEveryNumericDtype) {
  NpyArray f16 = LoadNpy(GoldenDir() + "f16_4.npy");
  EXPECT_EQ(f16.dtype.code, kDLFloat);
  EXPECT_EQ(f16.dtype.bits, 16);
  // IEEE half bit patterns of 1.0, -2.5, 0.0, 65504.
  EXPECT_EQ(Values<uint16_t>(f16), (std::vector<uint16_t>{0x3C00, 0xC100, 0x0000, 0x7BFF}));

  NpyArray b = LoadNpy(GoldenDir() + "bool_5.npy");
  EXPECT_EQ(b.dtype.code, kDLUInt);
  EXPECT_EQ(b.dtype.bits, 1);
  EXPECT_EQ(Values<uint8_t>(b), (std::vector<uint8_t>{1, 0, 1, 1, 0}));

  NpyArray i8 = LoadNpy(GoldenDir() + "i8_3.npy");
  EXPECT_EQ(i8.dtype.code, kDLInt);
  EXPECT_EQ(i8.dtype.bits, 8);
  EXPECT_EQ(Values<int8_t>(i8), (std::vector<int8_t>{-1, 0, 127}));

  NpyArray u16 = LoadNpy(GoldenDir() + "u16_2x2.npy");
  EXPECT_EQ(u16.dtype.code, kDLUInt);
  EXPECT_EQ(Values<uint16_t>(u16), (std::vector<uint16_t>{1, 2, 65535, 4}));

  NpyArray u32 = LoadNpy(GoldenDir() + "u32_3.npy");
  EXPECT_EQ(Values<uint32_t>(u32), (std::vector<uint32_t>{1, 2, 4000000000u}));

  NpyArray i32 = LoadNpy(GoldenDir() + "i32_2x1x2.npy");
  EXPECT_EQ(i32.shape, (std::vector<int64_t>{2, 1, 2}));
  EXPECT_EQ(Values<int32_t>(i32), (std::vector<int32_t>{1, -2, 3, -4}));

  NpyArray scalar = LoadNpy(GoldenDir() + "i64_scalar.npy");
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(Values<int64_t>(scalar), (std::vector<int64_t>{-42}));

  NpyArray empty = LoadNpy(GoldenDir() + "f64_empty_0x3.npy");
  EXPECT_EQ(empty.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(empty.dtype.bits, 64);
  EXPECT_TRUE(empty.data.empty());

  NpyArray c64 = LoadNpy(GoldenDir() + "c64_2.npy");
  EXPECT_EQ(c64.dtype.code, kDLComplex);
  EXPECT_EQ(c64.dtype.bits, 64);
  EXPECT_EQ(Values<float>(c64), (std::vector<float>{1, 2, 0, -3.5f}));
}

TEST(Npy, ReadsVersions2And3) {
  for (const char* name : {"v2_f32_3.npy", "v3_f32_3.npy"}) {
    NpyArray a = LoadNpy(GoldenDir() + name);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{3})) << name;
    EXPECT_EQ(Values<float>(a), (std::vector<float>{1.5f, 2.5f, 3.5f})) << name;
  }
}

TEST(Npy, WriterMatchesNumpyBytes) {
  // numpy's own v1.0 output for the same arrays, byte for byte.
  struct Case {
    const char* golden;
    DLDataType dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Case> cases = {
      {"f32_2x3.npy", {kDLFloat, 32, 1}, {2, 3}},
      {"f16_4.npy", {kDLFloat, 16, 1}, {4}},
      {"bool_5.npy", {kDLUInt, 1, 1}, {5}},
      {"i8_3.npy", {kDLInt, 8, 1}, {3}},
      {"u16_2x2.npy", {kDLUInt, 16, 1}, {2, 2}},
      {"i64_scalar.npy", {kDLInt, 64, 1}, {}},
      {"f64_empty_0x3.npy", {kDLFloat, 64, 1}, {0, 3}},
      {"c64_2.npy", {kDLComplex, 64, 1}, {2}},
      {"i32_2x1x2.npy", {kDLInt, 32, 1}, {2, 1, 2}},
  };
  for (const auto& c : cases) {
    std::string golden = ReadFile(GoldenDir() + c.golden);
    NpyArray a = LoadNpy(GoldenDir() + c.golden);
    std::string path = TempPath(c.golden);
    SaveNpy(path, c.dtype, c.shape, a.data.data(), a.data.size());
    EXPECT_EQ(ReadFile(path), golden) << c.golden;
    std::remove(path.c_str());
    EXPECT_EQ(SerializeNpyHeader(c.dtype, c.shape), golden.substr(0, golden.size() - a.data.size()))
        << c.golden;
  }
}

TEST(Npy, WriterRefusesWhatNumpyCannotHold) {
  std::string path = TempPath("bad.npy");
  float x = 0;
  EXPECT_THROW(SaveNpy(path, {kDLBfloat, 16, 1}, {1}, &x, 2), NpyError);
  EXPECT_THROW(SaveNpy(path, {kDLFloat, 32, 4}, {1}, &x, 16), NpyError);
  try {
    SaveNpy(path, {kDLFloat, 32, 1}, {2}, &x, 4);
    ADD_FAILURE() << "size mismatch accepted";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 8 bytes, got 4"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Npy, RefusesBigEndianWithReason) {
  ExpectRefused("big.npy", ReadFile(GoldenDir() + "big_endian_f4.npy"),
                {"'>f4'", "big-endian", "astype('<f4')"});
}

TEST(Npy, RefusesFortranOrderWithReason) {
  ExpectRefused("fortran.npy", ReadFile(GoldenDir() + "fortran_f4.npy"),
                {"Fortran-order", "ascontiguousarray"});
}

TEST(Npy, RefusesObjectAndStructuredDtypes) {
  ExpectRefused("object.npy", ReadFile(GoldenDir() + "object.npy"), {"'|O'"});
  ExpectRefused("structured.npy", ReadFile(GoldenDir() + "structured.npy"), {"structured"});
}

TEST(Npy, RefusesMalformedHeaders) {
  std::string data(24, '\0');
  ExpectRefused("magic.npy", "\x89PNG\r\n\x1a\n and more", {"magic"});
  ExpectRefused("short.npy", "\x93NUM", {"magic"});
  ExpectRefused("version.npy", std::string("\x93NUMPY\x04\x00\x10\x00", 10) + data,
                {"version 4.0"});
  ExpectRefused("nobrace.npy", V1Header("'descr': '<f4'}") + data, {"malformed", "'{'"});
  ExpectRefused("nokey.npy", V1Header("{'descr': '<f4', 'shape': (2,), }\n") + data,
                {"fortran_order"});
  ExpectRefused("noshape.npy", V1Header("{'descr': '<f4', 'fortran_order': False}") + data,
                {"'shape'"});
  ExpectRefused("extra.npy",
                V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}") + data,
                {"unexpected key 'x'"});
  ExpectRefused("negdim.npy",
                V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }") + data,
                {"non-negative"});
  ExpectRefused("bool.npy", V1Header("{'descr': '<f4', 'fortran_order': No, 'shape': (2,)}") + data,
                {"True or False"});
  ExpectRefused("unterminated.npy", V1Header("{'descr': '<f4") + data, {"unterminated"});
  ExpectRefused("kind.npy",
                V1Header("{'descr': '<U8', 'fortran_order': False, 'shape': (2,)}") + data,
                {"'<U8'"});
  ExpectRefused("fsize.npy",
                V1Header("{'descr': '<f3', 'fortran_order': False, 'shape': (2,)}") + data,
                {"'<f3'"});
  // Header length pointing past the end of the file.
  std::string truncated = V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)}");
  truncated[8] = '\xff';
  ExpectRefused("truncated.npy", truncated, {"truncated"});
}

TEST(Npy, RefusesHugeShapesBeforeAllocating) {
  // 2^62 floats would be 16 EiB: must be refused from the header alone.
  ExpectRefused(
      "huge.npy",
      V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }"),
      {"overflows"});
  ExpectRefused("manydims.npy",
                V1Header("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, "
                         "4294967296, 4294967296), }"),
                {"64 bits"});
  ExpectRefused("toolarge.npy",
                V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': "
                         "(99999999999999999999,), }"),
                {"dimension too large"});
  // Plausible size but the data is not in the file.
  ExpectRefused("short_data.npy",
                V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }") +
                    std::string(16, '\0'),
                {"needs 4000000 bytes", "holds 16"});
}

TEST(Npy, ReadsHeaderAloneAndChecksTheSize) {
  // What emberc quantize checks each calibration file with before reading any data.
  const auto h = ReadNpyHeader(GoldenDir() + "f32_2x3.npy");
  EXPECT_EQ(h.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(h.data_bytes, 24u);
  EXPECT_EQ(h.data_offset + h.data_bytes, ReadFile(GoldenDir() + "f32_2x3.npy").size());
  const std::string path = TempPath("header_only_short.npy");
  WriteFile(path, V1Header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000,), }"));
  try {
    ReadNpyHeader(path);
    ADD_FAILURE() << "a header announcing missing data was accepted";
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("needs 4000000 bytes"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Npy, RefusesTrailingBytes) {
  std::string bytes = ReadFile(GoldenDir() + "f32_2x3.npy") + "junk";
  ExpectRefused("trailing.npy", bytes, {"needs 24 bytes", "holds 28"});
}

TEST(Npy, MissingFileNamesIt) {
  try {
    LoadNpy("/nonexistent/dir/x.npy");
    ADD_FAILURE();
  } catch (const NpyError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.npy"), std::string::npos);
  }
  EXPECT_THROW(LoadNpy(GoldenDir()), NpyError);  // a directory
}

TEST(Npy, AcceptsPython2LongsAndDoubleQuotes) {
  std::string dict = "{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (2L, 1L)}";
  std::string bytes = V1Header(dict) + std::string("\x01\x00\x02\x00", 4);
  NpyArray a = ParseNpy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "mem");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(Values<int16_t>(a), (std::vector<int16_t>{1, 2}));
}

TEST(Npy, RoundTripsLargeHeaderAsVersion2) {
  // 40 dimensions of 1 still fit v1; check a long shape round-trips whatever version is chosen.
  std::vector<int64_t> shape(40, 1);
  shape[3] = 2;
  float data[2] = {7, 8};
  std::string path = TempPath("rank40.npy");
  SaveNpy(path, {kDLFloat, 32, 1}, shape, data, sizeof(data));
  NpyArray a = LoadNpy(path);
  EXPECT_EQ(a.shape, shape);
  EXPECT_EQ(Values<float>(a), (std::vector<float>{7, 8}));
  std::remove(path.c_str());
}

}  // namespace
