#include <ember/compiler/ir/tensor_type.h>
#include <ember/runtime/half_float.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <type_traits>

namespace ember {
namespace compiler {

std::string DTypeToString(DLDataType dtype) {
  if (dtype == kBool) return "bool";
  std::string base;
  switch (dtype.code) {
    case kDLInt:
      base = "int";
      break;
    case kDLUInt:
      base = "uint";
      break;
    case kDLFloat:
      base = "float";
      break;
    case kDLBfloat:
      base = "bfloat";
      break;
    default:
      base = "code" + std::to_string(dtype.code) + "_";
  }
  std::string s = base + std::to_string(dtype.bits);
  if (dtype.lanes != 1) s += "x" + std::to_string(dtype.lanes);
  return s;
}

DLDataType DTypeFromString(const std::string& name) {
  static const std::pair<const char*, DLDataType> kTable[] = {
      {"float32", kFloat32}, {"float64", kFloat64}, {"float16", kFloat16}, {"int8", kInt8},
      {"int16", kInt16},     {"int32", kInt32},     {"int64", kInt64},     {"uint8", kUInt8},
      {"uint16", kUInt16},   {"uint32", kUInt32},   {"uint64", kUInt64},   {"bool", kBool}};
  for (const auto& [n, t] : kTable) {
    if (name == n) return t;
  }
  throw CompileError("unknown dtype \"" + name + "\"");
}

int64_t DTypeBytes(DLDataType dtype) { return (dtype.bits * dtype.lanes + 7) / 8; }

int64_t TensorType::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string ShapeToString(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

std::string TensorType::ToString() const { return DTypeToString(dtype) + ShapeToString(shape); }

HostTensor::HostTensor(TensorType t) : type(std::move(t)) {
  data.assign(static_cast<size_t>(type.ByteSize()), 0);
}

namespace {

template <typename Fn>
auto DispatchGet(const HostTensor& t, int64_t i, Fn cast) {
  const uint8_t* p = t.data.data();
  DLDataType d = t.type.dtype;
  if (d == kFloat32) return cast(reinterpret_cast<const float*>(p)[i]);
  if (d == kFloat64) return cast(reinterpret_cast<const double*>(p)[i]);
  if (d == kFloat16) return cast(runtime::HalfToFloat(reinterpret_cast<const uint16_t*>(p)[i]));
  if (d == kInt64) return cast(reinterpret_cast<const int64_t*>(p)[i]);
  if (d == kInt32) return cast(reinterpret_cast<const int32_t*>(p)[i]);
  if (d == kInt16) return cast(reinterpret_cast<const int16_t*>(p)[i]);
  if (d == kInt8) return cast(reinterpret_cast<const int8_t*>(p)[i]);
  if (d == kUInt8 || d == kBool) return cast(reinterpret_cast<const uint8_t*>(p)[i]);
  if (d == kUInt16) return cast(reinterpret_cast<const uint16_t*>(p)[i]);
  if (d == kUInt32) return cast(reinterpret_cast<const uint32_t*>(p)[i]);
  if (d == kUInt64) return cast(reinterpret_cast<const uint64_t*>(p)[i]);
  throw CompileError("constant of dtype " + DTypeToString(d) + " cannot be evaluated on the host");
}

// v as integer type T. From a float: truncated toward zero, saturated to T's range, NaN to 0 (a
// C++ cast of a float outside T's range is undefined behaviour, and a model's constants may hold
// anything: -inf masks, 1e30 sentinels). ONNX leaves such a Cast's result undefined; the kernels
// keep the target's conversion instruction (llvm.fptosi.sat made the quantizing kernels 5x
// slower). From an integer: wrapped.
template <typename T, typename V>
T ToInteger(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    if (std::isnan(v)) return 0;
    const double limit = std::ldexp(1.0, std::numeric_limits<T>::digits);
    if (v >= limit) return std::numeric_limits<T>::max();
    if (v <= (std::numeric_limits<T>::is_signed ? -limit : 0.0)) {
      return std::numeric_limits<T>::lowest();
    }
  }
  return static_cast<T>(v);
}

template <typename V>
void DispatchSet(HostTensor& t, int64_t i, V v) {
  uint8_t* p = t.data.data();
  DLDataType d = t.type.dtype;
  if (d == kFloat32) {
    reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
  } else if (d == kFloat64) {
    reinterpret_cast<double*>(p)[i] = static_cast<double>(v);
  } else if (d == kFloat16) {
    // Through float, as a kernel computes float16: in float, rounded to half when stored.
    reinterpret_cast<uint16_t*>(p)[i] = runtime::FloatToHalf(static_cast<float>(v));
  } else if (d == kInt64) {
    reinterpret_cast<int64_t*>(p)[i] = ToInteger<int64_t>(v);
  } else if (d == kInt32) {
    reinterpret_cast<int32_t*>(p)[i] = ToInteger<int32_t>(v);
  } else if (d == kInt16) {
    reinterpret_cast<int16_t*>(p)[i] = ToInteger<int16_t>(v);
  } else if (d == kInt8) {
    reinterpret_cast<int8_t*>(p)[i] = ToInteger<int8_t>(v);
  } else if (d == kBool) {
    reinterpret_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
  } else if (d == kUInt8) {
    reinterpret_cast<uint8_t*>(p)[i] = ToInteger<uint8_t>(v);
  } else if (d == kUInt16) {
    reinterpret_cast<uint16_t*>(p)[i] = ToInteger<uint16_t>(v);
  } else if (d == kUInt32) {
    reinterpret_cast<uint32_t*>(p)[i] = ToInteger<uint32_t>(v);
  } else if (d == kUInt64) {
    reinterpret_cast<uint64_t*>(p)[i] = ToInteger<uint64_t>(v);
  } else {
    throw CompileError("constant of dtype " + DTypeToString(d) +
                       " cannot be evaluated on the host");
  }
}

}  // namespace

double HostTensor::GetAsDouble(int64_t i) const {
  return DispatchGet(*this, i, [](auto v) { return static_cast<double>(v); });
}
int64_t HostTensor::GetAsInt(int64_t i) const {
  return DispatchGet(*this, i, [](auto v) { return ToInteger<int64_t>(v); });
}
void HostTensor::SetFromDouble(int64_t i, double v) { DispatchSet(*this, i, v); }
void HostTensor::SetFromInt(int64_t i, int64_t v) { DispatchSet(*this, i, v); }

std::vector<int64_t> HostTensor::ToIntVector() const {
  std::vector<int64_t> out(static_cast<size_t>(NumElements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = GetAsInt(static_cast<int64_t>(i));
  return out;
}
std::vector<double> HostTensor::ToDoubleVector() const {
  std::vector<double> out(static_cast<size_t>(NumElements()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = GetAsDouble(static_cast<int64_t>(i));
  return out;
}

HostTensorPtr MakeInt64Tensor(const std::vector<int64_t>& values) {
  auto t = std::make_shared<HostTensor>(TensorType{{static_cast<int64_t>(values.size())}, kInt64});
  if (!values.empty()) std::memcpy(t->data.data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

HostTensorPtr MakeScalarTensor(DLDataType dtype, double v) {
  auto t = std::make_shared<HostTensor>(TensorType{{}, dtype});
  t->SetFromDouble(0, v);
  return t;
}

std::shared_ptr<HostTensor> Transpose2d(const HostTensor& t) {
  const int64_t rows = t.type.shape.at(0), cols = t.type.shape.at(1);
  const size_t bytes = static_cast<size_t>(DTypeBytes(t.type.dtype));
  auto out = std::make_shared<HostTensor>(TensorType{{cols, rows}, t.type.dtype});
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      std::memcpy(&out->data[static_cast<size_t>(j * rows + i) * bytes],
                  &t.data[static_cast<size_t>(i * cols + j) * bytes], bytes);
    }
  }
  return out;
}

}  // namespace compiler
}  // namespace ember
