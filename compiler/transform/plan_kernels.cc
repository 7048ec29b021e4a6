// PlanKernels: the strategy pass. Each Conv and Gemm, in its final layout, gets the kernel the
// strategy chooses and the weight layout that kernel reads; later passes only read the plan.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/transform.h>

namespace ember {
namespace compiler {

void PlanKernels(Graph* graph, const KernelStrategy& strategy) {
  for (Node& n : graph->nodes()) {
    if (n.op != "Conv" && n.op != "Gemm") continue;
    strategy.Choose(*graph, n).AttachTo(&n);
  }
}

}  // namespace compiler
}  // namespace ember
