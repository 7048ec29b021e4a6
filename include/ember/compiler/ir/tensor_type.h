/*!
 * \file ember/compiler/ir/tensor_type.h
 * \brief Static tensor types (shape + dtype) and host-side constant tensors of the graph IR.
 */
#ifndef EMBER_COMPILER_IR_TENSOR_TYPE_H_
#define EMBER_COMPILER_IR_TENSOR_TYPE_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief Every compiler error users see; the message names the file/node/op/argument. */
class CompileError : public std::runtime_error {
 public:
  explicit CompileError(const std::string& msg) : std::runtime_error(msg) {}
};

/*! \brief An unsupported operator or operator variant (the conformance runner reports UNSUPPORTED).
 */
class UnsupportedError : public CompileError {
 public:
  explicit UnsupportedError(const std::string& msg) : CompileError(msg) {}
};

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kFloat64{kDLFloat, 64, 1};
constexpr DLDataType kFloat16{kDLFloat, 16, 1};
constexpr DLDataType kInt8{kDLInt, 8, 1};
constexpr DLDataType kInt16{kDLInt, 16, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};
constexpr DLDataType kInt64{kDLInt, 64, 1};
constexpr DLDataType kUInt8{kDLUInt, 8, 1};
constexpr DLDataType kUInt16{kDLUInt, 16, 1};
constexpr DLDataType kUInt32{kDLUInt, 32, 1};
constexpr DLDataType kUInt64{kDLUInt, 64, 1};
/*! \brief TVM spells bool as uint1 (one byte in memory, "bool" in graph.json). */
constexpr DLDataType kBool{kDLUInt, 1, 1};

inline bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }

/*! \brief "float32", "int64", "bool", ... as graph.json's dltype list spells them. */
std::string DTypeToString(DLDataType dtype);
/*! \brief Inverse of DTypeToString; throws CompileError on an unknown name. */
DLDataType DTypeFromString(const std::string& name);
/*! \brief Bytes of one element (bool counts 1). */
int64_t DTypeBytes(DLDataType dtype);

/*! \brief Static tensor type; a 0-d scalar has shape {}. */
struct TensorType {
  std::vector<int64_t> shape;
  DLDataType dtype = kFloat32;

  int64_t ndim() const { return static_cast<int64_t>(shape.size()); }
  int64_t NumElements() const;
  int64_t ByteSize() const { return NumElements() * DTypeBytes(dtype); }
  /*! \brief e.g. "float32[1,3,224,224]". */
  std::string ToString() const;
  bool operator==(const TensorType& o) const { return shape == o.shape && dtype == o.dtype; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

std::string ShapeToString(const std::vector<int64_t>& shape);

/*! \brief Constant tensor data on the host, row-major and compact. */
struct HostTensor {
  TensorType type;
  std::vector<uint8_t> data;

  HostTensor() = default;
  /*! \brief Zero-filled tensor of the given type. */
  explicit HostTensor(TensorType t);

  int64_t NumElements() const { return type.NumElements(); }
  template <typename T>
  T* Data() {
    return reinterpret_cast<T*>(data.data());
  }
  template <typename T>
  const T* Data() const {
    return reinterpret_cast<const T*>(data.data());
  }
  /*! \brief Element i converted to double / int64 whatever the dtype. */
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt(int64_t i) const;
  /*! \brief Store v converted to the tensor's dtype at element i. */
  void SetFromDouble(int64_t i, double v);
  void SetFromInt(int64_t i, int64_t v);
  /*! \brief All elements as int64 (for shape/axes/pads inputs). */
  std::vector<int64_t> ToIntVector() const;
  std::vector<double> ToDoubleVector() const;
};

using HostTensorPtr = std::shared_ptr<const HostTensor>;

/*! \brief 1-D int64 constant from a vector (shape {n}). */
HostTensorPtr MakeInt64Tensor(const std::vector<int64_t>& values);
/*! \brief 0-d scalar constant of the dtype holding v. */
HostTensorPtr MakeScalarTensor(DLDataType dtype, double v);
/*! \brief The 2-D tensor t ([R, C], any dtype) transposed: [C, R]. */
std::shared_ptr<HostTensor> Transpose2d(const HostTensor& t);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_TENSOR_TYPE_H_
