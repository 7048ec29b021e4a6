// The kernel choice from the per-target schedule table: one object answers the layout pass, the
// strategy pass (PlanKernels) and lowering, so each node's kernel is decided in one place.
#ifndef EMBER_COMPILER_SCHEDULE_TABLE_STRATEGY_H_
#define EMBER_COMPILER_SCHEDULE_TABLE_STRATEGY_H_

#include <ember/compiler/strategy.h>

#include <vector>

#include "ember/compiler/lower.h"
#include "ember/compiler/target.h"
#include "schedule.h"

namespace ember::compiler::schedule {

class TableStrategy : public KernelStrategy, public lower::GroupScheduler {
 public:
  TableStrategy(const Target& target, const StrategyOptions& options);

  int64_t ConvLayoutBlock(const Graph& graph, const Node& conv) const override;
  bool IntegerConvReadsBlock(const Graph& graph, const Node& conv, int64_t block) const override;
  KernelPlan Choose(const Graph& graph, const Node& node) const override;
  /*! \brief Pools first (portable, no entry), then the group's planned kernel, then the other
   * entries in the table's order: a kernel declines a group whose epilogue it cannot fuse. */
  bool Schedule(const FusedGroup& group, const lower::ScheduleOptions& opts,
                lower::LoweredFunc* out) const override;

 private:
  const ScheduleEntry* FirstOf(ScheduleKind kind) const;
  KernelPlan ChooseConv(const Graph& graph, const Node& conv) const;
  /*! \brief An integer conv (kDataZeroPointAttr): the first int8 entry that takes it, else the
   * empty plan (canonicalization then keeps the exact float form instead). */
  KernelPlan ChooseInt8Conv(const Graph& graph, const Node& conv) const;
  /*! \brief The entry ChooseInt8Conv picks, or null. */
  const ScheduleEntry* Int8EntryFor(const Graph& graph, const Node& conv) const;
  /*! \brief The block an integer conv's kernel writes (its entry's lanes where that kernel works
   * blocked and the output channels fill it), else 0. */
  int64_t Int8LayoutBlock(const Graph& graph, const Node& conv) const;
  KernelPlan ChooseDense(const Graph& graph, const Node& gemm) const;
  /*! \brief The 1x1 conv whose result (through elementwise nodes) is the depthwise conv `dw`'s
   * data, when entry params `p`'s kernel can compute both in one pass; else null. */
  const Node* ExpansionOf(const Graph& graph, const Node& dw, const ConvShape& s,
                          const ExpandDepthwiseParams& p) const;

  Target target_;
  StrategyOptions options_;
  // The entries on offer, in order of preference: the forced one, else the target's.
  std::vector<const ScheduleEntry*> entries_;
};

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_TABLE_STRATEGY_H_
