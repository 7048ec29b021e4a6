/*!
 * \file ember/runtime/ndarray.h
 * \brief NDArray: a reference-counted DLTensor, DLPack exchange, and the params file format.
 */
#ifndef EMBER_RUNTIME_NDARRAY_H_
#define EMBER_RUNTIME_NDARRAY_H_

#include <dlpack/dlpack.h>
#include <ember/runtime/byte_stream.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/container.h>
#include <ember/runtime/data_type.h>
#include <ember/runtime/object.h>

#include <string>
#include <utility>
#include <vector>

namespace ember::runtime {

/*! \brief Every CPU allocation the runtime makes is aligned to this (cache line, AVX-512). */
constexpr size_t kAllocAlignment = 64;

/*!
 * \brief A reference-counted n-dimensional array. Copying an NDArray shares the data; use
 * CopyFrom/CopyTo to copy elements.
 */
class NDArray : public ObjectRef {
 public:
  class Container;
  using ContainerType = Container;

  NDArray() = default;
  explicit NDArray(ObjectPtr<Object> data) : ObjectRef(std::move(data)) {}

  /*! \brief The tensor description (data, shape, dtype, device). */
  inline const DLTensor* operator->() const;
  inline ShapeTuple Shape() const;
  inline DLDataType DataType() const;
  inline DLDevice Device() const;
  /*! \brief Product of the shape. */
  int64_t NumElements() const;
  /*! \brief NumElements() times the element size. */
  size_t NBytes() const;
  bool IsContiguous() const;

  /*! \brief Copies elements from \p other; shape and dtype must match. */
  void CopyFrom(const DLTensor* other);
  void CopyFrom(const NDArray& other);
  /*! \brief Copies \p nbytes from host memory; \p nbytes must equal NBytes(). */
  void CopyFromBytes(const void* data, size_t nbytes);
  void CopyToBytes(void* data, size_t nbytes) const;
  void CopyTo(DLTensor* other) const;
  void CopyTo(const NDArray& other) const;
  /*! \brief A new array on \p dev holding a copy. */
  NDArray CopyTo(DLDevice dev) const;

  /*!
   * \brief An array sharing this one's memory with another shape/dtype; the view must not need
   * more bytes than this array has. The view keeps this array alive.
   */
  NDArray CreateView(ShapeTuple shape, DLDataType dtype) const;

  /*!
   * \brief Exports as DLPack. The returned tensor keeps this array alive until the consumer
   * calls its deleter.
   */
  DLManagedTensor* ToDLPack() const;

  /*! \brief Allocates an uninitialised array (CPU memory aligned to kAllocAlignment). */
  static NDArray Empty(ShapeTuple shape, DLDataType dtype, DLDevice dev);
  /*!
   * \brief Takes ownership of a DLPack tensor: its deleter runs when the last NDArray
   * referring to it goes away.
   */
  static NDArray FromDLPack(DLManagedTensor* tensor);
  /*! \brief Element copy between two tensors of equal shape and dtype. */
  static void CopyFromTo(const DLTensor* from, DLTensor* to, TVMStreamHandle stream = nullptr);

  /*! \brief Appends this array in the per-array params encoding (see ndarray.cc). */
  void Save(ByteWriter* writer) const;
  /*! \brief Reads one array written by Save, validating it before allocating. */
  static NDArray Load(ByteReader* reader);

  // ---- C ABI helpers: an NDArray crosses the boundary as the DLTensor* inside its container.
  /*! \brief The DLTensor* handle of \p arr (borrowed; no reference added). */
  static DLTensor* FFIGetHandle(const NDArray& arr);
  /*! \brief The NDArray whose container holds \p handle (adds a reference). */
  static NDArray FromFFIHandle(DLTensor* handle);
  /*! \brief The container object of a handle produced by FFIGetHandle or TVMArrayAlloc. */
  static Container* ContainerFromHandle(DLTensor* handle);

  inline const Container* get() const;
  inline Container* get_mutable() const;
};

/*! \brief The object behind an NDArray; DLTensor sits first so handles map back to it. */
class NDArray::Container : public Object {
 public:
  DLTensor dl_tensor;
  /*! Owner of the memory: the DLManagedTensor of FromDLPack, or the viewed array's container. */
  void* manager_ctx{nullptr};

  static constexpr const char* _type_key = "runtime.NDArray";
  static constexpr uint32_t _type_index = TypeIndex::kRuntimeNDArray;
  EMBER_DECLARE_FINAL_OBJECT_INFO(Container, Object);

  Container() : dl_tensor{} {}
  /*! Shape storage; dl_tensor.shape points into it. */
  ShapeTuple shape_;
};

inline const NDArray::Container* NDArray::get() const {
  return static_cast<const Container*>(data_.get());
}
inline NDArray::Container* NDArray::get_mutable() const {
  return static_cast<Container*>(data_.get());
}
inline const DLTensor* NDArray::operator->() const { return &get()->dl_tensor; }
inline ShapeTuple NDArray::Shape() const { return get()->shape_; }
inline DLDataType NDArray::DataType() const { return get()->dl_tensor.dtype; }
inline DLDevice NDArray::Device() const { return get()->dl_tensor.device; }

/*! \brief Bytes of a tensor's elements: product(shape) * element size; throws on overflow. */
size_t GetDataSize(const DLTensor& t);

// ---------------------------------------------------------------------------------------------
// The params file (params.bin): a named list of arrays, byte-compatible with TVM's
// relay.save_param_dict. The encoding is documented beside the reader in ndarray.cc.

/*! \brief Arrays with their names, in file order. */
using NamedArrays = std::vector<std::pair<std::string, NDArray>>;

/*! \brief Appends the params encoding of \p params to \p out. */
void SaveParams(std::string* out, const NamedArrays& params);
void SaveParams(std::string* out, const Map<String, NDArray>& params);
/*! \brief Writes \p params to \p path; throws naming the path on I/O failure. */
void SaveParamsToFile(const std::string& path, const NamedArrays& params);

/*!
 * \brief Parses a params blob. Throws Error naming \p source on a wrong magic, truncated data,
 * absurd ndim or shape, a byte-size mismatch or size overflow, before any large allocation.
 */
NamedArrays LoadParams(const char* data, size_t size, const std::string& source = "params");
NamedArrays LoadParamsFromFile(const std::string& path);

/*! \brief Reads a whole file; throws naming \p path if it cannot. */
std::string ReadFileToString(const std::string& path);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_NDARRAY_H_
