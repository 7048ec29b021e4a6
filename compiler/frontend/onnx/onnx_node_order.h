// Puts an ONNX graph's nodes in an order where every node comes after the nodes it reads.
#ifndef EMBER_COMPILER_FRONTEND_ONNX_ONNX_NODE_ORDER_H_
#define EMBER_COMPILER_FRONTEND_ONNX_ONNX_NODE_ORDER_H_

#include <onnx/onnx_pb.h>

#include <string>

namespace ember {
namespace compiler {

/*!
 * \brief Sorts the nodes of `graph` topologically, keeping the file's order wherever the data
 *        allows. ONNX requires sorted graphs, but exporters and converters write unsorted ones
 *        that ONNX Runtime accepts (IS-Net's float16 export is one). A name no node, input or
 *        initializer defines counts as defined (an outer scope's value, or an error that import
 *        reports with the node). Throws CompileError naming a node of a cycle.
 */
void SortNodesTopologically(onnx::GraphProto* graph, const std::string& source);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_FRONTEND_ONNX_ONNX_NODE_ORDER_H_
