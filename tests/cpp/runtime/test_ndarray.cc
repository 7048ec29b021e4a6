#include <ember/runtime/ndarray.h>
#include <ember/runtime/registry.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ndarray_test_util.h"

namespace ember::runtime {
namespace {

using test_util::ErrorOf;
using test_util::Floats;
using test_util::Values;

TEST(NDArray, EmptyIsAlignedAndDescribed) {
  NDArray a = NDArray::Empty({2, 3, 5}, kFloat32, kCPU);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % kAllocAlignment, 0u);
  EXPECT_EQ(a->ndim, 3);
  EXPECT_EQ(a->shape[2], 5);
  EXPECT_EQ(a.NumElements(), 30);
  EXPECT_EQ(a.NBytes(), 120u);
  EXPECT_EQ(a.DataType(), kFloat32);
  EXPECT_TRUE(a.IsContiguous());
  EXPECT_EQ(a.Shape(), ShapeTuple({2, 3, 5}));
  NDArray scalar = NDArray::Empty({}, kInt64, kCPU);
  EXPECT_EQ(scalar.NBytes(), 8u);
  NDArray empty = NDArray::Empty({0, 4}, kFloat32, kCPU);
  EXPECT_EQ(empty.NBytes(), 0u);
  EXPECT_NE(empty->data, nullptr);
  EXPECT_EQ(NDArray::Empty({9}, kBool, kCPU).NBytes(), 9u);  // a byte per bool
}

TEST(NDArray, EmptyRejectsBadShapes) {
  EXPECT_NE(ErrorOf([] { NDArray::Empty({-1}, kFloat32, kCPU); }).find("negative extent"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              NDArray::Empty({int64_t{1} << 40, int64_t{1} << 40}, kFloat32, kCPU);
            }).find("overflow"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              NDArray::Empty({1}, kFloat32, DLDevice{kDLCUDA, 0});
            }).find("cuda(0)"),
            std::string::npos);
}

TEST(NDArray, CopiesCheckShapeAndDtype) {
  NDArray a = Floats({2, 2}, {1, 2, 3, 4});
  NDArray b = NDArray::Empty({2, 2}, kFloat32, kCPU);
  b.CopyFrom(a);
  EXPECT_EQ(Values(b), (std::vector<float>{1, 2, 3, 4}));
  NDArray c = a.CopyTo(kCPU);
  EXPECT_FALSE(c.same_as(a));
  EXPECT_EQ(Values(c), Values(a));
  NDArray wrong_shape = NDArray::Empty({4}, kFloat32, kCPU);
  EXPECT_NE(ErrorOf([&] { wrong_shape.CopyFrom(a); }).find("shape mismatch: from [2, 2] to [4]"),
            std::string::npos);
  NDArray wrong_dtype = NDArray::Empty({2, 2}, kInt32, kCPU);
  EXPECT_NE(ErrorOf([&] { wrong_dtype.CopyFrom(a); }).find("dtype mismatch: from float32 to int32"),
            std::string::npos);
  float buf[3];
  EXPECT_NE(ErrorOf([&] { a.CopyToBytes(buf, sizeof(buf)); }).find("byte size mismatch"),
            std::string::npos);
  EXPECT_THROW(a.CopyFromBytes(buf, sizeof(buf)), Error);
}

TEST(NDArray, ViewSharesMemoryAndKeepsBaseAlive) {
  NDArray view;
  const void* data = nullptr;
  {
    NDArray base = Floats({2, 3}, {0, 1, 2, 3, 4, 5});
    data = base->data;
    view = base.CreateView({3, 2}, kFloat32);
    EXPECT_EQ(base.use_count(), 2);  // the view holds the base
  }
  EXPECT_EQ(view->data, data);
  EXPECT_EQ(Values(view), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  NDArray bytes = view.CreateView({24}, kUInt8);
  EXPECT_EQ(bytes.NBytes(), 24u);
  EXPECT_NE(ErrorOf([&] { view.CreateView({7}, kFloat32); }).find("needs more bytes"),
            std::string::npos);
}

struct ForeignTensor {
  std::vector<float> data{1, 2, 3, 4, 5, 6};
  std::vector<int64_t> shape{2, 3};
  DLManagedTensor managed{};
  bool* deleted;
};

TEST(NDArray, DLPackRoundTripWithForeignDeleter) {
  bool deleted = false;
  auto* foreign = new ForeignTensor();
  foreign->deleted = &deleted;
  foreign->managed.dl_tensor.data = foreign->data.data();
  foreign->managed.dl_tensor.device = kCPU;
  foreign->managed.dl_tensor.ndim = 2;
  foreign->managed.dl_tensor.dtype = kFloat32;
  foreign->managed.dl_tensor.shape = foreign->shape.data();
  foreign->managed.manager_ctx = foreign;
  foreign->managed.deleter = [](DLManagedTensor* self) {
    auto* owner = static_cast<ForeignTensor*>(self->manager_ctx);
    *owner->deleted = true;
    delete owner;
  };
  {
    NDArray a = NDArray::FromDLPack(&foreign->managed);
    EXPECT_EQ(a->data, foreign->data.data());  // zero copy
    EXPECT_EQ(a.Shape(), ShapeTuple({2, 3}));
    NDArray alias = a;
    // Export again: the consumer's deleter must keep the array (and the foreign memory) alive.
    DLManagedTensor* out = a.ToDLPack();
    a = NDArray();
    alias = NDArray();
    EXPECT_FALSE(deleted);
    EXPECT_EQ(static_cast<float*>(out->dl_tensor.data)[5], 6.0f);
    out->deleter(out);
  }
  EXPECT_TRUE(deleted);
}

TEST(NDArray, ToDLPackKeepsOwnArrayAlive) {
  DLManagedTensor* out = nullptr;
  {
    NDArray a = Floats({3}, {7, 8, 9});
    out = a.ToDLPack();
  }
  EXPECT_EQ(static_cast<float*>(out->dl_tensor.data)[2], 9.0f);
  NDArray back = NDArray::FromDLPack(out);  // ownership returns; deleter runs with `back`
  EXPECT_EQ(Values(back), (std::vector<float>{7, 8, 9}));
}

// ---- params format ----

// One array "w" = float32[2] {1.0, -2.0}, written by hand from the format description.
const unsigned char kGoldenParams[] = {
    0xB7, 0x9C, 0x04, 0x05, 0x4F, 0x8D, 0xE5, 0xF7,       // list magic 0xF7E58D4F05049CB7
    0,    0,    0,    0,    0,    0,    0,    0,          // reserved
    1,    0,    0,    0,    0,    0,    0,    0,          // 1 name
    1,    0,    0,    0,    0,    0,    0,    0,    'w',  // "w"
    1,    0,    0,    0,    0,    0,    0,    0,          // 1 array
    0x3F, 0xA1, 0xB4, 0x96, 0xF0, 0x40, 0x5E, 0xDD,       // array magic 0xDD5E40F096B4A13F
    0,    0,    0,    0,    0,    0,    0,    0,          // reserved
    1,    0,    0,    0,    0,    0,    0,    0,          // device cpu(0)
    1,    0,    0,    0,                                  // ndim 1
    2,    32,   1,    0,                                  // float32
    2,    0,    0,    0,    0,    0,    0,    0,          // shape [2]
    8,    0,    0,    0,    0,    0,    0,    0,          // 8 bytes
    0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0,       // 1.0f, -2.0f
};

std::string Golden() {
  return std::string(reinterpret_cast<const char*>(kGoldenParams), sizeof(kGoldenParams));
}

TEST(Params, GoldenBytes) {
  std::string out;
  SaveParams(&out, NamedArrays{{"w", Floats({2}, {1.0f, -2.0f})}});
  EXPECT_EQ(out, Golden());
  NamedArrays loaded = LoadParams(out.data(), out.size());
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(loaded[0].first, "w");
  EXPECT_EQ(Values(loaded[0].second), (std::vector<float>{1.0f, -2.0f}));
}

TEST(Params, TheFileHoldsTheBytesOfTheString) {
  // SaveParamsToFile streams to the file; it must write what SaveParams builds in memory.
  const std::string path = ::testing::TempDir() + "/ember_params_golden.bin";
  SaveParamsToFile(path, NamedArrays{{"w", Floats({2}, {1.0f, -2.0f})}});
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  EXPECT_EQ(bytes, Golden());
  const std::string message = ErrorOf([] {
    SaveParamsToFile("/nonexistent/dir/params.bin", NamedArrays{{"w", Floats({1}, {1.0f})}});
  });
  EXPECT_NE(message.find("cannot open /nonexistent/dir/params.bin for writing"), std::string::npos)
      << message;
}

TEST(Params, RoundTripManyDtypesAndFile) {
  NamedArrays params;
  params.emplace_back("conv.weight", Floats({2, 1, 3}, {1, 2, 3, 4, 5, 6}));
  NDArray ints = NDArray::Empty({4}, kInt8, kCPU);
  int8_t iv[4] = {-1, 0, 1, 127};
  ints.CopyFromBytes(iv, 4);
  params.emplace_back("ints", ints);
  params.emplace_back("scalar", Floats({}, {3.5f}));
  params.emplace_back("empty", NDArray::Empty({0, 3}, kFloat32, kCPU));
  std::string path = ::testing::TempDir() + "/ember_params_roundtrip.bin";
  SaveParamsToFile(path, params);
  NamedArrays back = LoadParamsFromFile(path);
  std::remove(path.c_str());
  ASSERT_EQ(back.size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(back[i].first, params[i].first);
    EXPECT_EQ(back[i].second.Shape(), params[i].second.Shape());
    EXPECT_EQ(back[i].second.DataType(), params[i].second.DataType());
    std::string x(params[i].second.NBytes(), '\0'), y(back[i].second.NBytes(), '\0');
    params[i].second.CopyToBytes(x.data(), x.size());
    back[i].second.CopyToBytes(y.data(), y.size());
    EXPECT_EQ(x, y) << params[i].first;
  }
  Map<String, NDArray> as_map{{"a", Floats({1}, {1})}};
  std::string out;
  SaveParams(&out, as_map);
  EXPECT_EQ(LoadParams(out.data(), out.size())[0].first, "a");
  EXPECT_NE(ErrorOf([] {
              LoadParamsFromFile("/nonexistent/params.bin");
            }).find("/nonexistent/params.bin"),
            std::string::npos);
}

TEST(Params, GlobalsSaveAndLoad) {
  const PackedFunc* save = Registry::Get("runtime.SaveParams");
  const PackedFunc* load = Registry::Get("runtime.LoadParams");
  ASSERT_NE(save, nullptr);
  ASSERT_NE(load, nullptr);
  Map<String, NDArray> in{{"w", Floats({2}, {1.0f, -2.0f})}};
  TVMRetValue bytes = (*save)(in);
  EXPECT_EQ(bytes.type_code(), kTVMBytes);
  EXPECT_EQ(bytes.As<std::string>(), Golden());
  std::string blob = bytes.As<std::string>();
  TVMByteArray arr{blob.data(), blob.size()};
  Map<String, NDArray> out = (*load)(arr);
  EXPECT_EQ(Values(out.at("w")), (std::vector<float>{1.0f, -2.0f}));
}

void Put64(std::string* s, size_t offset, uint64_t v) { std::memcpy(&(*s)[offset], &v, 8); }
void Put32(std::string* s, size_t offset, uint32_t v) { std::memcpy(&(*s)[offset], &v, 4); }

// Offsets into the golden file.
constexpr size_t kNameCount = 16, kArrayCount = 33, kArrayMagic = 41, kNdim = 65, kDtype = 69,
                 kShape = 73, kByteSize = 81;

std::string LoadError(const std::string& bytes) {
  return ErrorOf([&] { LoadParams(bytes.data(), bytes.size(), "model/params.bin"); });
}

TEST(Params, MalformedInputsGiveClearErrors) {
  std::string s = Golden();
  s[0] = 0;
  EXPECT_NE(LoadError(s).find("bad params magic"), std::string::npos) << LoadError(s);
  EXPECT_NE(LoadError(s).find("model/params.bin"), std::string::npos);

  s = Golden();
  s[kArrayMagic] = 0;
  EXPECT_NE(LoadError(s).find("bad array magic"), std::string::npos) << LoadError(s);
  EXPECT_NE(LoadError(s).find("param 0 \"w\""), std::string::npos) << LoadError(s);

  s = Golden();
  Put32(&s, kNdim, 33);
  EXPECT_NE(LoadError(s).find("ndim 33 is out of range"), std::string::npos) << LoadError(s);
  Put32(&s, kNdim, 0xFFFFFFFFu);
  EXPECT_NE(LoadError(s).find("ndim -1"), std::string::npos) << LoadError(s);

  s = Golden();
  Put64(&s, kShape, static_cast<uint64_t>(-5));
  EXPECT_NE(LoadError(s).find("negative extent -5"), std::string::npos) << LoadError(s);

  s = Golden();
  Put64(&s, kByteSize, 12);
  EXPECT_NE(LoadError(s).find("byte size 12 does not match"), std::string::npos) << LoadError(s);

  // A huge but representable array (1 GiB, so also on 32-bit targets) in a tiny file: refused
  // before allocating.
  s = Golden();
  Put64(&s, kShape, uint64_t{1} << 28);
  Put64(&s, kByteSize, uint64_t{4} << 28);
  EXPECT_NE(LoadError(s).find("truncated array data"), std::string::npos) << LoadError(s);

  // Element count times element size overflows 64 bits.
  s = Golden();
  Put64(&s, kShape, uint64_t{1} << 62);
  EXPECT_NE(LoadError(s).find("overflows"), std::string::npos) << LoadError(s);

  s = Golden();
  s[kDtype + 1] = 0;  // zero bits
  EXPECT_NE(LoadError(s).find("invalid array dtype"), std::string::npos) << LoadError(s);

  s = Golden();
  Put64(&s, kNameCount, uint64_t{1} << 60);
  EXPECT_NE(LoadError(s).find("truncated"), std::string::npos) << LoadError(s);

  s = Golden();
  Put64(&s, kArrayCount, 2);
  EXPECT_NE(LoadError(s).find("names 1 arrays but holds 2"), std::string::npos) << LoadError(s);

  s = Golden() + "x";
  EXPECT_NE(LoadError(s).find("trailing bytes"), std::string::npos) << LoadError(s);
}

TEST(Params, EveryTruncationAndByteFlipIsAnErrorNotACrash) {
  const std::string golden = Golden();
  for (size_t n = 0; n < golden.size(); ++n) {
    std::string cut = golden.substr(0, n);
    EXPECT_THROW(LoadParams(cut.data(), cut.size()), Error) << "prefix of " << n << " bytes";
  }
  for (size_t i = 0; i < golden.size(); ++i) {
    for (unsigned char v : {0x00, 0x7F, 0x80, 0xFF}) {
      std::string s = golden;
      s[i] = static_cast<char>(v);
      try {
        LoadParams(s.data(), s.size());
      } catch (const Error&) {
      }
    }
  }
}

}  // namespace
}  // namespace ember::runtime
