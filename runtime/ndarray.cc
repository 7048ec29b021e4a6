// NDArray storage, copies, views, DLPack exchange and the params file format.
#include <ember/runtime/device_api.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/registry.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "minimal.h"
#include "ndarray_header.h"

namespace ember::runtime {

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
// The C ABI hands out &container->dl_tensor as the array handle and maps it back by this offset:
// 16 on 64-bit targets; on 32-bit ARM the 12-byte header is padded to DLTensor's 8-byte alignment.
constexpr size_t kDLTensorOffset = offsetof(NDArray::Container, dl_tensor);
#pragma GCC diagnostic pop
static_assert(kDLTensorOffset ==
                  (sizeof(Object) + alignof(DLTensor) - 1) / alignof(DLTensor) * alignof(DLTensor),
              "DLTensor must directly follow the object header");

namespace {

/*! \brief Largest rank a loaded or allocated array may have. */
constexpr int kMaxNdim = 32;

// How the memory of a container is owned; each kind has its own deleter.
void DeleteOwned(Object* obj) {
  auto* c = static_cast<NDArray::Container*>(obj);
  if (c->dl_tensor.data != nullptr) {
    DeviceAPI::Get(c->dl_tensor.device)->FreeDataSpace(c->dl_tensor.device, c->dl_tensor.data);
  }
  delete c;
}

void DeleteView(Object* obj) {
  auto* c = static_cast<NDArray::Container*>(obj);
  static_cast<Object*>(c->manager_ctx)->DecRef();
  delete c;
}

#if !EMBER_RUNTIME_MINIMAL
void DeleteFromDLPack(Object* obj) {
  auto* c = static_cast<NDArray::Container*>(obj);
  auto* managed = static_cast<DLManagedTensor*>(c->manager_ctx);
  if (managed->deleter != nullptr) managed->deleter(managed);
  delete c;
}
#endif

NDArray::Container* NewContainer(ShapeTuple shape, DLDataType dtype, DLDevice dev,
                                 Object::FDeleter deleter) {
  auto* c = new NDArray::Container();
  ObjectInternal::SetHeader(c, TypeIndex::kRuntimeNDArray, deleter);
  c->shape_ = std::move(shape);
  c->dl_tensor.shape = const_cast<int64_t*>(c->shape_.data());
  c->dl_tensor.ndim = static_cast<int>(c->shape_.size());
  c->dl_tensor.dtype = dtype;
  c->dl_tensor.device = dev;
  return c;
}

// Element count and byte size, refusing negative extents and overflow.
size_t CheckedDataSize(const int64_t* shape, int ndim, DLDataType dtype, const char* context) {
  EMBER_CHECK(dtype.bits > 0 && dtype.lanes > 0)
      << context << ": invalid dtype " << dtype << " (bits and lanes must be positive)";
  uint64_t elems = 1;
  for (int i = 0; i < ndim; ++i) {
    EMBER_CHECK(shape[i] >= 0) << context << ": negative extent " << shape[i] << " in dimension "
                               << i;
    EMBER_CHECK(!__builtin_mul_overflow(elems, static_cast<uint64_t>(shape[i]), &elems))
        << context << ": element count overflows 64 bits";
  }
  // Per element, as TVM's GetDataSize: bool (uint1) takes one byte each, not one bit.
  uint64_t elem_bytes = (static_cast<uint64_t>(dtype.bits) * dtype.lanes + 7) / 8;
  uint64_t bytes = 0;
  EMBER_CHECK(!__builtin_mul_overflow(elems, elem_bytes, &bytes))
      << context << ": byte size overflows 64 bits";
  EMBER_CHECK(bytes <= static_cast<uint64_t>(SIZE_MAX)) << context << ": byte size too large";
  return static_cast<size_t>(bytes);
}

bool IsCompact(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

std::string ShapeString(const DLTensor& t) {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < t.ndim; ++i) os << (i ? ", " : "") << t.shape[i];
  os << ']';
  return os.str();
}

}  // namespace

size_t GetDataSize(const DLTensor& t) {
  return CheckedDataSize(t.shape, t.ndim, t.dtype, "tensor");
}

NDArray NDArray::Empty(ShapeTuple shape, DLDataType dtype, DLDevice dev) {
  EMBER_CHECK_LE(shape.size(), static_cast<size_t>(kMaxNdim)) << "NDArray::Empty: rank too large";
  size_t nbytes =
      CheckedDataSize(shape.data(), static_cast<int>(shape.size()), dtype, "NDArray::Empty");
  DeviceAPI* api = DeviceAPI::Get(dev);
  void* data = api->AllocDataSpace(dev, nbytes, kAllocAlignment, dtype);
  Container* c = NewContainer(std::move(shape), dtype, dev, DeleteOwned);
  c->dl_tensor.data = data;
  return NDArray(ObjectPtr<Object>(c));
}

int64_t NDArray::NumElements() const {
  int64_t n = 1;
  for (int i = 0; i < get()->dl_tensor.ndim; ++i) n *= get()->dl_tensor.shape[i];
  return n;
}

size_t NDArray::NBytes() const { return GetDataSize(get()->dl_tensor); }

bool NDArray::IsContiguous() const { return IsCompact(get()->dl_tensor); }

void NDArray::CopyFromTo(const DLTensor* from, DLTensor* to, TVMStreamHandle stream) {
  EMBER_CHECK(from != nullptr && to != nullptr) << "CopyFromTo: null tensor";
  EMBER_CHECK(from->ndim == to->ndim &&
              std::equal(from->shape, from->shape + from->ndim, to->shape))
      << "CopyFromTo: shape mismatch: from " << ShapeString(*from) << " to " << ShapeString(*to);
  EMBER_CHECK(from->dtype == to->dtype)
      << "CopyFromTo: dtype mismatch: from " << from->dtype << " to " << to->dtype;
  EMBER_CHECK(IsCompact(*from) && IsCompact(*to))
      << "CopyFromTo: only compact tensors are supported";
  size_t nbytes = GetDataSize(*from);
  DLDevice dev = from->device.device_type != kDLCPU ? from->device : to->device;
  DeviceAPI::Get(dev)->CopyDataFromTo(from->data, static_cast<size_t>(from->byte_offset), to->data,
                                      static_cast<size_t>(to->byte_offset), nbytes, from->device,
                                      to->device, stream);
}

void NDArray::CopyFrom(const DLTensor* other) {
  EMBER_CHECK(defined()) << "CopyFrom on a null NDArray";
  CopyFromTo(other, &get_mutable()->dl_tensor);
}

void NDArray::CopyFrom(const NDArray& other) {
  EMBER_CHECK(other.defined()) << "CopyFrom: source NDArray is null";
  CopyFrom(&other.get()->dl_tensor);
}

void NDArray::CopyTo(DLTensor* other) const {
  EMBER_CHECK(defined()) << "CopyTo on a null NDArray";
  CopyFromTo(&get()->dl_tensor, other);
}

void NDArray::CopyTo(const NDArray& other) const {
  EMBER_CHECK(other.defined()) << "CopyTo: destination NDArray is null";
  CopyTo(&other.get_mutable()->dl_tensor);
}

NDArray NDArray::CopyTo(DLDevice dev) const {
  EMBER_CHECK(defined()) << "CopyTo on a null NDArray";
  NDArray out = Empty(Shape(), DataType(), dev);
  out.CopyFrom(*this);
  return out;
}

void NDArray::CopyFromBytes(const void* data, size_t nbytes) {
  EMBER_CHECK(defined()) << "CopyFromBytes on a null NDArray";
  const DLTensor& t = get()->dl_tensor;
  size_t expected = GetDataSize(t);
  EMBER_CHECK_EQ(nbytes, expected) << "CopyFromBytes: byte size mismatch for array of shape "
                                   << ShapeString(t) << " and dtype " << t.dtype;
  EMBER_CHECK(IsCompact(t)) << "CopyFromBytes: array is not compact";
  DeviceAPI::Get(t.device)->CopyDataFromTo(data, 0, t.data, static_cast<size_t>(t.byte_offset),
                                           nbytes, kCPU, t.device, nullptr);
}

void NDArray::CopyToBytes(void* data, size_t nbytes) const {
  EMBER_CHECK(defined()) << "CopyToBytes on a null NDArray";
  const DLTensor& t = get()->dl_tensor;
  size_t expected = GetDataSize(t);
  EMBER_CHECK_EQ(nbytes, expected) << "CopyToBytes: byte size mismatch for array of shape "
                                   << ShapeString(t) << " and dtype " << t.dtype;
  EMBER_CHECK(IsCompact(t)) << "CopyToBytes: array is not compact";
  DeviceAPI::Get(t.device)->CopyDataFromTo(t.data, static_cast<size_t>(t.byte_offset), data, 0,
                                           nbytes, t.device, kCPU, nullptr);
}

NDArray NDArray::CreateView(ShapeTuple shape, DLDataType dtype) const {
  EMBER_CHECK(defined()) << "CreateView on a null NDArray";
  EMBER_CHECK(IsContiguous()) << "CreateView: the base array must be compact";
  EMBER_CHECK_LE(shape.size(), static_cast<size_t>(kMaxNdim)) << "CreateView: rank too large";
  size_t view_bytes =
      CheckedDataSize(shape.data(), static_cast<int>(shape.size()), dtype, "CreateView");
  size_t base_bytes = NBytes();
  EMBER_CHECK_LE(view_bytes, base_bytes) << "CreateView: a view of shape " << shape << " and dtype "
                                         << dtype << " needs more bytes than the base array has";
  Container* base = get_mutable();
  Container* c = NewContainer(std::move(shape), dtype, base->dl_tensor.device, DeleteView);
  c->dl_tensor.data = base->dl_tensor.data;
  c->dl_tensor.byte_offset = base->dl_tensor.byte_offset;
  static_cast<Object*>(base)->IncRef();
  c->manager_ctx = base;
  return NDArray(ObjectPtr<Object>(c));
}

DLManagedTensor* NDArray::ToDLPack() const {
  EMBER_CHECK(defined()) << "ToDLPack on a null NDArray";
  auto* managed = new DLManagedTensor();
  Container* c = get_mutable();
  managed->dl_tensor = c->dl_tensor;
  static_cast<Object*>(c)->IncRef();
  managed->manager_ctx = c;
  managed->deleter = [](DLManagedTensor* self) {
    static_cast<Object*>(self->manager_ctx)->DecRef();
    delete self;
  };
  return managed;
}

#if !EMBER_RUNTIME_MINIMAL
NDArray NDArray::FromDLPack(DLManagedTensor* tensor) {
  EMBER_CHECK(tensor != nullptr) << "FromDLPack: null DLManagedTensor";
  const DLTensor& t = tensor->dl_tensor;
  EMBER_CHECK(t.ndim >= 0 && t.ndim <= kMaxNdim)
      << "FromDLPack: ndim " << t.ndim << " is out of range [0, " << kMaxNdim << "]";
  ShapeTuple shape(t.shape, t.shape + t.ndim);
  Container* c = NewContainer(std::move(shape), t.dtype, t.device, DeleteFromDLPack);
  c->dl_tensor.data = t.data;
  c->dl_tensor.byte_offset = t.byte_offset;
  c->dl_tensor.strides = t.strides;  // lives as long as the producer's tensor
  c->manager_ctx = tensor;
  return NDArray(ObjectPtr<Object>(c));
}
#endif

DLTensor* NDArray::FFIGetHandle(const NDArray& arr) {
  return arr.defined() ? &arr.get_mutable()->dl_tensor : nullptr;
}

NDArray::Container* NDArray::ContainerFromHandle(DLTensor* handle) {
  return static_cast<Container*>(
      reinterpret_cast<Object*>(reinterpret_cast<char*>(handle) - kDLTensorOffset));
}

NDArray NDArray::FromFFIHandle(DLTensor* handle) {
  if (handle == nullptr) return NDArray();
  return NDArray(ObjectPtr<Object>(ContainerFromHandle(handle)));
}

// ---------------------------------------------------------------------------------------------
// The params format (params.bin), byte-compatible with TVM's save_param_dict. Little-endian:
//
//   list:   u64 magic 0xF7E58D4F05049CB7   kParamsListMagic
//           u64 reserved (0)
//           u64 name_count, then name_count times { u64 length, length bytes }   (names)
//           u64 array_count (== name_count), then array_count arrays
//   array:  u64 magic 0xDD5E40F096B4A13F   kNDArrayMagic
//           u64 reserved (0)
//           i32 device_type, i32 device_id    (DLDevice; loading always places arrays on cpu)
//           i32 ndim                          (0..kMaxNdim)
//           u8 code, u8 bits, u16 lanes       (DLDataType)
//           i64 shape[ndim]
//           i64 data_byte_size                (== product(shape) * bits * lanes / 8)
//           data_byte_size bytes of row-major element data
//
// The reader validates each header field against the bytes that remain before it allocates.

namespace {
constexpr uint64_t kNDArrayMagic = 0xDD5E40F096B4A13FULL;
static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4,
              "the params format stores DLDevice in 8 bytes and DLDataType in 4");
}  // namespace

void NDArray::Save(ByteWriter* w) const {
  EMBER_CHECK(defined()) << "NDArray::Save: null array";
  const DLTensor& t = get()->dl_tensor;
  NDArray host = *this;
  if (t.device.device_type != kDLCPU || !IsCompact(t)) host = CopyTo(kCPU);
  const DLTensor& h = host.get()->dl_tensor;
  w->Write<uint64_t>(kNDArrayMagic);
  w->Write<uint64_t>(0);
  w->Write<DLDevice>(t.device);
  w->Write<int32_t>(h.ndim);
  w->Write<DLDataType>(h.dtype);
  for (int i = 0; i < h.ndim; ++i) w->Write<int64_t>(h.shape[i]);
  size_t nbytes = GetDataSize(h);
  w->Write<int64_t>(static_cast<int64_t>(nbytes));
  w->Write(static_cast<const char*>(h.data) + h.byte_offset, nbytes);
}

NDArray ReadArrayHeader(ByteReader* r) {
  const std::string& src = r->source();
  uint64_t magic = r->Read<uint64_t>("array magic");
  if (magic != kNDArrayMagic) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "0x%016llX", static_cast<unsigned long long>(magic));
    EMBER_LOG_FATAL << src << ": bad array magic " << buf << " at byte " << r->offset() - 8
                    << " (expected 0xDD5E40F096B4A13F): not an NDArray";
  }
  r->Read<uint64_t>("array reserved field");
  r->Read<DLDevice>("array device");  // stored for compatibility; arrays load onto the cpu
  int32_t ndim = r->Read<int32_t>("array ndim");
  EMBER_CHECK(ndim >= 0 && ndim <= kMaxNdim)
      << src << ": array ndim " << ndim << " is out of range [0, " << kMaxNdim << "]";
  DLDataType dtype = r->Read<DLDataType>("array dtype");
  EMBER_CHECK(dtype.bits > 0 && dtype.lanes > 0 && dtype.code <= kDLBfloat)
      << src << ": invalid array dtype (code " << int{dtype.code} << ", bits " << int{dtype.bits}
      << ", lanes " << dtype.lanes << ")";
  std::vector<int64_t> shape(static_cast<size_t>(ndim));
  for (int i = 0; i < ndim; ++i) shape[i] = r->Read<int64_t>("array shape");
  std::string context = src + ": array";
  size_t expected = CheckedDataSize(shape.data(), ndim, dtype, context.c_str());
  int64_t data_bytes = r->Read<int64_t>("array byte size");
  EMBER_CHECK(data_bytes >= 0 && static_cast<uint64_t>(data_bytes) == expected)
      << src << ": array byte size " << data_bytes << " does not match shape " << ShapeTuple(shape)
      << " and dtype " << dtype << " (" << expected << " bytes)";
  // Checked before allocating: a corrupt header cannot make us reserve gigabytes.
  EMBER_CHECK_LE(expected, r->remaining())
      << src << ": truncated array data: shape " << ShapeTuple(shape) << " needs " << expected
      << " bytes";
  return NDArray::Empty(ShapeTuple(std::move(shape)), dtype, kCPU);
}

NDArray NDArray::Load(ByteReader* r) {
  NDArray arr = ReadArrayHeader(r);
  const size_t bytes = arr.NBytes();
  arr.CopyFromBytes(r->Take(bytes, "array data"), bytes);
  return arr;
}

namespace {

void WriteParams(ByteWriter* w, const NamedArrays& params) {
  w->Write<uint64_t>(kParamsListMagic);
  w->Write<uint64_t>(0);
  w->Write<uint64_t>(params.size());
  for (const auto& kv : params) w->WriteString(kv.first);
  w->Write<uint64_t>(params.size());
  for (const auto& kv : params) {
    EMBER_CHECK(kv.second.defined()) << "SaveParams: array \"" << kv.first << "\" is null";
    kv.second.Save(w);
  }
}

}  // namespace

void SaveParams(std::string* out, const NamedArrays& params) {
  ByteWriter w(out);
  WriteParams(&w, params);
}

void SaveParams(std::string* out, const Map<String, NDArray>& params) {
  NamedArrays list;
  list.reserve(params.size());
  for (const auto& kv : params) list.emplace_back(kv.first.str(), kv.second);
  SaveParams(out, list);
}

NamedArrays LoadParams(const char* data, size_t size, const std::string& source) {
  ByteReader r(data, size, source);
  uint64_t magic = r.Read<uint64_t>("params magic");
  if (magic != kParamsListMagic) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "0x%016llX", static_cast<unsigned long long>(magic));
    EMBER_LOG_FATAL << source << ": bad params magic " << buf
                    << " (expected 0xF7E58D4F05049CB7): not a params file";
  }
  r.Read<uint64_t>("params reserved field");
  std::vector<std::string> names = r.ReadStringVector("param names");
  uint64_t count = r.Read<uint64_t>("array count");
  EMBER_CHECK_EQ(count, names.size())
      << source << ": the file names " << names.size() << " arrays but holds " << count;
  NamedArrays out;
  out.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    try {
      out.emplace_back(names[i], NDArray::Load(&r));
    } catch (const Error& e) {
      EMBER_LOG_FATAL << e.what() << " (param " << i << " \"" << names[i] << "\")";
    }
  }
  EMBER_CHECK_EQ(r.remaining(), size_t{0}) << source << ": trailing bytes after the last array";
  return out;
}

std::string ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EMBER_CHECK(in.good()) << "cannot open " << path << " for reading";
  std::ostringstream os;
  os << in.rdbuf();
  EMBER_CHECK(!in.bad()) << "error reading " << path;
  return os.str();
}

NamedArrays LoadParamsFromFile(const std::string& path) {
  std::string bytes = ReadFileToString(path);
  return LoadParams(bytes.data(), bytes.size(), path);
}

void SaveParamsToFile(const std::string& path, const NamedArrays& params) {
  std::ofstream out(path, std::ios::binary);
  EMBER_CHECK(out.good()) << "cannot open " << path << " for writing";
  ByteWriter w(&out);  // straight to the file: no copy of every array in one string first
  WriteParams(&w, params);
  out.close();
  EMBER_CHECK(out.good()) << "error writing " << path;
}

// Python and tools reach the params format through these globals (TVM's names).
EMBER_REGISTER_GLOBAL("runtime.SaveParams").set_body_typed([](Map<String, NDArray> params) {
  std::string out;
  SaveParams(&out, params);
  TVMByteArray arr{out.data(), out.size()};
  TVMRetValue rv;
  rv = arr;
  return rv;
});

EMBER_REGISTER_GLOBAL("runtime.LoadParams").set_body_typed([](std::string bytes) {
  Map<String, NDArray> out;
  for (auto& kv : LoadParams(bytes.data(), bytes.size())) out.Set(String(kv.first), kv.second);
  return out;
});

}  // namespace ember::runtime
