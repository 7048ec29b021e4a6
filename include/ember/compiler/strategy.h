/*!
 * \file ember/compiler/strategy.h
 * \brief Which kernel runs each node: the one interface through which passes and lowering learn
 *  the choice. compiler/schedule/ implements it from its per-target table; the driver hands it
 *  to the passes (layout, PlanKernels) and to lowering (as a lower::GroupScheduler).
 */
#ifndef EMBER_COMPILER_STRATEGY_H_
#define EMBER_COMPILER_STRATEGY_H_

#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/kernel_plan.h>

#include <cstdint>
#include <string>

namespace ember {
namespace compiler {

/*! \brief Knobs of the choice, parsed once (the driver reads them from the environment:
 *  EMBER_DISABLE_SCHEDULES, EMBER_SCHEDULE, EMBER_KEEP_NCHW, EMBER_NO_WINOGRAD). */
struct StrategyOptions {
  /*! \brief False: every group through the default schedule, weights as the model has them. */
  bool schedules = true;
  /*! \brief Non-empty: that table entry is the only one offered, on any target (tests and
   *  benchmarks run every entry on the host this way; the loop nests are portable). */
  std::string forced_schedule;
  /*! \brief False: every conv in NCHW, no NCHW[x]c chains (to compare the layouts). */
  bool blocked_layout = true;
  /*! \brief False: 3 x 3 convs stay direct (params.bin keeps the model's size). */
  bool winograd = true;
  /*! \brief False: a depthwise conv never computes the 1x1 conv before it in its own kernel
   *  (KernelPlan::fused_with_producer), each runs apart (to compare the two). */
  bool fuse_expansions = true;
};

class KernelStrategy {
 public:
  virtual ~KernelStrategy() = default;
  /*! \brief The NCHW[x]c block the kernel for this NCHW conv reads and writes, or 0 when it runs
   *  in NCHW (always 0 without blocked_layout). AlterConvLayout asks it before rewriting. */
  virtual int64_t ConvLayoutBlock(const Graph& graph, const Node& conv) const = 0;
  /*! \brief For an NCHW integer conv (kDataZeroPointAttr): whether its kernel reads its data as
   *  it is stored in `block` (NCHW[block]c), so that AlterConvLayout needs no transform. */
  virtual bool IntegerConvReadsBlock(const Graph& graph, const Node& conv, int64_t block) const = 0;
  /*! \brief The kernel for `node` in its final layout and the weight layout that kernel reads;
   *  an empty plan for nodes the default schedule runs. */
  virtual KernelPlan Choose(const Graph& graph, const Node& node) const = 0;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_STRATEGY_H_
