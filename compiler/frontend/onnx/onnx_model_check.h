// The ONNX half of import: the model made static, validated, checked, converted and shape-inferred
// in place, before any IR exists. Split from the importer so the import fuzzer runs exactly this.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_MODEL_CHECK_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_MODEL_CHECK_H_

#include <ember/compiler/frontend.h>
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*!
 * \brief Reads and parses an .onnx file and its external data (from the model's directory only),
 * before any library but protobuf sees it. Throws CompileError naming `path` (a directory, a
 * file that cannot be opened, one that does not parse or has no graph).
 */
onnx::ModelProto ReadOnnxModelFile(const std::string& path);
/*! \brief Parses a model held in memory; throws CompileError naming `source`. */
onnx::ModelProto ParseOnnxModel(const std::string& bytes, const std::string& source);

/*! \brief The model's default-domain (ai.onnx) opset; 1 when it names none. */
int64_t DefaultDomainOpset(const onnx::ModelProto& model);

/*! \brief The reason in a libonnx version-converter failure ("file.cc:56: fn: Assertion `expr`
 *  failed: reason" -> "reason"); other texts as they are. */
std::string ConverterReason(const std::string& what);

/*!
 * \brief Refuses a tensor that still keeps its data in an external file (ImportOnnxFile reads
 * external data in first: onnx_external_data.h), sorts the nodes into data order
 * (onnx_node_order.h), fixes input dims from `options` (every remaining one must be static), makes
 * the inputs of options.bindings constants (what was bound goes to *bound when not null;
 * onnx_bind_inputs.h), validates what libonnx trusts (onnx_validator.h), runs libonnx's checker,
 * converts an opset below kMinImportOpset, and infers shapes. For IR 9-10 or opset 18-21, which
 * libonnx does not know, Ember checks names and types itself and skips what libonnx would misjudge
 * (onnx_newer_opsets.h). Returns the opset the model now has.
 * Throws CompileError (UnsupportedError for an opset it cannot read or convert) naming `source`.
 */
int64_t PrepareOnnxModel(onnx::ModelProto* model, const std::string& source,
                         const ImportOptions& options, std::vector<BoundInput>* bound = nullptr);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_MODEL_CHECK_H_
