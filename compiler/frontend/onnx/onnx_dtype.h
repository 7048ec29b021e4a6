// ONNX TensorProto element types <-> DLPack dtypes (private to the compiler).
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_DTYPE_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_DTYPE_H_

#include <ember/compiler/ir/tensor_type.h>

#include <string>

namespace ember {
namespace compiler {

/*! \brief Throws UnsupportedError naming `where` for string/complex/bfloat16 and unknown codes. */
DLDataType OnnxToDType(int32_t elem_type, const std::string& where);
int32_t DTypeToOnnx(DLDataType dtype);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_DTYPE_H_
