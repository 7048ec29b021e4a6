// emberc --bind NAME=VALUE: a model input becomes an initializer before the model is checked.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_BIND_INPUTS_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_BIND_INPUTS_H_

#include <ember/compiler/ir/graph.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*!
 * \brief Turns each bound input of `model` into an initializer holding the given values (in the
 *        input's element type and static shape) and removes it from the graph's inputs, so ONNX
 *        shape inference and Ember's folding see a constant. Returns what was bound, for the
 *        artifact. Throws CompileError naming the input for an unknown name, a dynamic shape, a
 *        value that is not a number or the wrong count of values.
 */
std::vector<BoundInput> BindInputs(onnx::ModelProto* model, const std::string& source,
                                   const std::map<std::string, std::string>& bindings);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_BIND_INPUTS_H_
