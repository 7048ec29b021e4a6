// The graph passes from import to fusion, in order: one list for the model and for the branches
// of its run-time Ifs, which are compiled the same way.
#ifndef EMBER_COMPILER_DRIVER_GRAPH_PASSES_H_
#define EMBER_COMPILER_DRIVER_GRAPH_PASSES_H_

#include <ember/compiler/strategy.h>
#include <ember/compiler/transform.h>

#include <vector>

namespace ember {
namespace compiler {

/*! \brief The passes, choosing kernels through `strategy` (which must outlive them). */
std::vector<Pass> GraphPasses(const KernelStrategy& strategy);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_DRIVER_GRAPH_PASSES_H_
