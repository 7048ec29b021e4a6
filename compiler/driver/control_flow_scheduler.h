// Kernels for control flow that stays in the graph: an If whose condition is known only at run
// time becomes one function of lib.so that tests the condition and runs the kernels of the taken
// branch, so the artifact stays a plain graph-executor artifact.
#ifndef EMBER_COMPILER_DRIVER_CONTROL_FLOW_SCHEDULER_H_
#define EMBER_COMPILER_DRIVER_CONTROL_FLOW_SCHEDULER_H_

#include <ember/compiler/lower.h>
#include <ember/compiler/strategy.h>

namespace ember {
namespace compiler {

/*!
 * \brief Lowers If groups itself and hands every other group to `kernels`.
 *
 * Each branch is compiled as a graph of its own through the model's passes (GraphPasses) and
 * fusion; its kernels are lowered with this scheduler too (nested Ifs), and their bodies are
 * stitched into the If's function: the branch's inputs and outputs are the If's arguments, its
 * intermediates workspace memory, and its weights read-only data of lib.so.
 */
class ControlFlowScheduler : public lower::GroupScheduler {
 public:
  ControlFlowScheduler(const lower::GroupScheduler* kernels, const KernelStrategy* strategy,
                       int opt_level)
      : kernels_(kernels), strategy_(strategy), opt_level_(opt_level) {}

  bool Schedule(const FusedGroup& group, const lower::ScheduleOptions& opts,
                lower::LoweredFunc* out) const override;

 private:
  const lower::GroupScheduler* kernels_;
  const KernelStrategy* strategy_;
  int opt_level_;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_DRIVER_CONTROL_FLOW_SCHEDULER_H_
