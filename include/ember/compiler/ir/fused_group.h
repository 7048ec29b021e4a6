/*!
 * \file ember/compiler/ir/fused_group.h
 * \brief A fused group: the unit the kernel side (BuildKernelLibrary) compiles into one function.
 */
#ifndef EMBER_COMPILER_IR_FUSED_GROUP_H_
#define EMBER_COMPILER_IR_FUSED_GROUP_H_

#include <ember/compiler/ir/graph.h>

#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*!
 * \brief Nodes that become one exported kernel.
 *
 * Kernel argument order in lib.so: every value of `inputs`, then every value of `outputs`, each a
 * DLTensor*, exactly as the graph.json node lists them. Constants that were not folded away are
 * params, and therefore inputs too. Intermediate values (produced and consumed inside the group,
 * not outputs) live only inside the kernel. An Identity-only group copies its input (used when a
 * graph output is directly an input or a constant).
 */
struct FusedGroup {
  std::string func_name;
  const Graph* graph = nullptr;
  std::vector<const Node*> nodes;  // topological order
  std::vector<int> inputs;         // value ids, argument order
  std::vector<int> outputs;        // value ids, argument order
  /*! \brief Index of the "master" node (the out-elemwise-fusable or reduce anchor), or -1. */
  int anchor = -1;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_FUSED_GROUP_H_
