// Models newer than Debian's libonnx (IR 8, opset 17): IR 9-13 and ai.onnx opsets 18-26. libonnx
// refuses their IR version and its opset-17 schemas misread the ops whose signature changed, so
// for such models Ember judges what libonnx cannot, and libonnx only sees what it understands.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_NEWER_OPSETS_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_NEWER_OPSETS_H_

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief Newest IR version and ai.onnx opset Debian's libonnx (1.12) knows. */
constexpr int64_t kLibonnxIrVersion = 8;
constexpr int64_t kLibonnxMaxOpset = 17;
/*! \brief Newest IR version emberc reads. */
constexpr int64_t kMaxImportIrVersion = 13;

/*!
 * \brief False when `op` changed its inputs, attributes or meaning in an opset after 17 and at or
 * before `opset`, so libonnx's schema for it would misjudge the node.
 */
bool LibonnxKnowsOp(const std::string& op, int64_t opset);

/*! \brief The ONNX signature of an op added after opset 17, of which libonnx has no schema:
 *  its inputs' names in order, the first `required_inputs` of them required (the rest may be
 *  absent or empty), and one to `max_outputs` outputs. */
struct NewerOpSignature {
  std::vector<const char*> inputs;
  int required_inputs;
  int max_outputs;
};
/*! \brief The signature of `op` when emberc reads it and libonnx has no schema; else null. */
const NewerOpSignature* NewerOpSignatureOf(const std::string& op);

/*!
 * \brief True for a node libonnx's inference would misread or crash on whatever the opset: an
 * Einsum with an implicit output and an upper-case label (libonnx 1.12 counts the labels in an
 * array of 26 indexed from 'a' and corrupts the heap).
 */
bool LibonnxMisreadsNode(const onnx::NodeProto& node);

/*! \brief Whether libonnx knows every ai.onnx op of `graph` and its subgraphs (LibonnxKnowsOp)
 *  and misreads none of its nodes (LibonnxMisreadsNode). */
bool LibonnxKnowsEveryOp(const onnx::GraphProto& graph, int64_t opset);

/*!
 * \brief What libonnx's checker would check, for a model it cannot read (IR > 8 or opset > 17):
 * the IR version (<= kMaxImportIrVersion), that every node input and graph output is defined
 * before use (subgraphs see their enclosing graphs), that no value is defined twice, and that no
 * tensor, value or Cast uses an element type newer than IR 8 (float8, int4, float4, int2). Throws
 * CompileError (UnsupportedError for a new element type) naming `source`, the node and the value.
 */
void CheckNewerModel(const onnx::ModelProto& model, const std::string& source);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_NEWER_OPSETS_H_
