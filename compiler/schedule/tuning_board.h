// The board a compile tunes for or reads winners of (emberc --remote): its CPU name from
// /proc/cpuinfo joins every workload key (WorkloadTarget), so winners measured on one board
// serve every board with the same CPU and never another. Set once by the driver for the whole
// compile (ScopedTuningBoard); empty: keys name the target only, as before.
#ifndef EMBER_COMPILER_SCHEDULE_TUNING_BOARD_H_
#define EMBER_COMPILER_SCHEDULE_TUNING_BOARD_H_

#include <string>

namespace ember::compiler::schedule {

/*! \brief " board=CPU" for keys, or "" when no board is set. */
std::string TuningBoardSuffix();

/*! \brief Sets the board's CPU name for its lifetime (one compile at a time per process). */
class ScopedTuningBoard {
 public:
  explicit ScopedTuningBoard(const std::string& cpu);
  ~ScopedTuningBoard();
  ScopedTuningBoard(const ScopedTuningBoard&) = delete;
  ScopedTuningBoard& operator=(const ScopedTuningBoard&) = delete;

 private:
  std::string previous_;
};

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_TUNING_BOARD_H_
