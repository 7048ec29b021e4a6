// The values of a float32 ONNX tensor, read from either of its payload fields.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_FLOAT_VALUES_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_FLOAT_VALUES_H_

#include <onnx/onnx_pb.h>

#include <vector>

namespace ember {
namespace compiler {

/*! \brief The float32 values of `t` (raw_data or float_data). Throws CompileError naming the
 *  tensor when it is not float32 or its payload does not hold what its dims say, before
 *  allocating anything of the dims' size. */
std::vector<float> Float32Values(const onnx::TensorProto& t);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_FLOAT_VALUES_H_
