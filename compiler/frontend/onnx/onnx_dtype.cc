#include "frontend/onnx/onnx_dtype.h"

namespace ember {
namespace compiler {
namespace {

// TensorProto.DataType codes (onnx.proto).
constexpr std::pair<int32_t, DLDataType> kTable[] = {
    {1, kFloat32}, {2, kUInt8}, {3, kInt8},     {4, kUInt16},   {5, kInt16},   {6, kInt32},
    {7, kInt64},   {9, kBool},  {10, kFloat16}, {11, kFloat64}, {12, kUInt32}, {13, kUInt64}};

}  // namespace

DLDataType OnnxToDType(int32_t elem_type, const std::string& where) {
  for (const auto& [code, dt] : kTable) {
    if (code == elem_type) return dt;
  }
  static const char* kNames[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                 "int16",      "int32",   "int64",  "string", "bool",
                                 "float16",    "double",  "uint32", "uint64", "complex64",
                                 "complex128", "bfloat16"};
  std::string name =
      elem_type >= 0 && elem_type <= 16 ? kNames[elem_type] : "code " + std::to_string(elem_type);
  throw UnsupportedError(where + ": element type " + name + " is not supported");
}

int32_t DTypeToOnnx(DLDataType dtype) {
  for (const auto& [code, dt] : kTable) {
    if (dt == dtype) return code;
  }
  return 0;
}

}  // namespace compiler
}  // namespace ember
