// External data: tensors whose bytes live in a side file next to the model (ONNX's
// data_location = EXTERNAL with "location", "offset" and "length" entries).
//
// Every location is resolved inside the model's directory and nowhere else: an absolute location,
// one with a ".." component, or one that reaches outside the directory through a symlink is
// refused (the class of CVE-2024-27318 and CVE-2024-5187 in onnx). Resolution follows symlinks
// itself, one component at a time, and never looks at a path outside the directory, so no message
// depends on what exists elsewhere on the machine. The bytes are read into raw_data before any
// libonnx checker or inference sees the model, so libonnx never resolves a location itself.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_EXTERNAL_DATA_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_EXTERNAL_DATA_H_

#include <onnx/onnx_pb.h>

#include <string>

namespace ember {
namespace compiler {

/*!
 * \brief Reads the external data of every tensor of \p model (initializers, Constant values and
 *        other tensor attributes, sparse tensors, in every subgraph) from files inside
 *        \p model_dir into raw_data, and marks the tensors as holding their data inline.
 *        Throws CompileError naming \p source and the tensor for a location that is absolute,
 *        contains "..", escapes the directory through a symlink, does not name a regular file,
 *        or whose offset and length do not lie in the file or do not match the tensor's size.
 */
void LoadExternalData(onnx::ModelProto* model, const std::string& model_dir,
                      const std::string& source);

/*!
 * \brief Throws CompileError naming the first tensor that still keeps its data in an external
 *        file: a model given as bytes has no directory to resolve the location against.
 *        Reads only (the walk shares LoadExternalData's mutable visitor).
 */
void RefuseExternalData(onnx::ModelProto* model, const std::string& source);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_EXTERNAL_DATA_H_
