// Checks an ONNX model before libonnx's checker, version converter and shape inference see it.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_VALIDATOR_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_VALIDATOR_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>

namespace ember {
namespace compiler {

/*!
 * \brief Throws CompileError naming `source`, the node, op and attribute (expected against got)
 * when the model has no nodes or no outputs, when an attribute libonnx's shape inference divides
 * by or indexes with (strides, dilations, kernel_shape, pads, perm, axes, axis, group, ...) is out
 * of range for the node's input ranks, or when a tensor's size has a negative dim or overflows.
 * libonnx trusts those attributes and crashes (SIGFPE, SIGSEGV) on bad ones.
 */
void ValidateOnnxModel(const onnx::ModelProto& model, int64_t opset, const std::string& source);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_VALIDATOR_H_
