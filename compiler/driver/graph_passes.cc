#include "driver/graph_passes.h"

namespace ember {
namespace compiler {

std::vector<Pass> GraphPasses(const KernelStrategy& strategy) {
  const KernelStrategy* s = &strategy;
  return {
      {"fold_constants", FoldConstants},
      {"simplify", Simplify},
      {"fold_batchnorm", FoldBatchNorm},
      {"sink_phase_interleave", SinkPhaseInterleave},
      {"fold_constants", FoldConstants},
      {"simplify", Simplify},
      {"dead_code", EliminateDeadCode},
      {"float16_in_float32", ComputeFloat16InFloat32},
      {"conv_as_dense", [s](Graph* g) { ConvAsDense(g, *s); }},
      {"canonicalize_dense", CanonicalizeDense},
      {"alter_layout", [s](Graph* g) { AlterConvLayout(g, *s); }},
      {"causal_masks", MarkCausalMasks},
      {"plan_kernels", [s](Graph* g) { PlanKernels(g, *s); }},
      {"winograd_weights", WinogradConvWeights},
      {"pack_conv_weights", PackConvWeights},
      {"pack_dense_weights", PackDenseWeights},
  };
}

}  // namespace compiler
}  // namespace ember
