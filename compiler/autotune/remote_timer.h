// Timing tuning candidates on a board (emberc --tune --remote): each candidate's one-kernel
// artifact (one_kernel_artifact.h) is copied there with ember_remote's session and timed by the
// board's own ember-run (--bench --json, one thread); its outputs come back for the tuner's
// check against the default candidate.
#ifndef EMBER_COMPILER_AUTOTUNE_REMOTE_TIMER_H_
#define EMBER_COMPILER_AUTOTUNE_REMOTE_TIMER_H_

#include <ember/compiler/remote_board.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/remote/remote_session.h"

namespace ember::compiler::autotune {

class RemoteKernelTimer {
 public:
  /*! \brief Connects and prepares the board's directory; throws CompileError naming the board. */
  explicit RemoteKernelTimer(const RemoteBoardOptions& options);
  /*! \brief Removes the board's directory. */
  ~RemoteKernelTimer();

  /*! \brief The board's CPU name from its /proc/cpuinfo (remote::BoardCpuName). */
  std::string BoardCpu() const;

  struct Timing {
    double median_ms = 0;
    std::vector<float> outputs;  // float32 outputs, concatenated in output order
  };
  /*! \brief Times the one-kernel artifact in `dir` (graph.json, lib.so, params.bin) on the
   * board: 5 x `repeat` samples after warm-up, each of enough runs to last 0.2 ms; throws
   * CompileError with the board's message when it fails. */
  Timing Time(const std::string& dir, int repeat);

  const std::string& board() const { return options_.board; }

 private:
  /*! \brief ember-run --bench --json of art/... on one thread, `number` runs per sample. */
  remote::BoardRun Bench(const std::string& art_rel, int repeat, int number);

  RemoteBoardOptions options_;
  std::unique_ptr<remote::Transport> transport_;
  std::unique_ptr<remote::RemoteSession> session_;
  std::optional<remote::BoardRuntime> runtime_;
};

}  // namespace ember::compiler::autotune

#endif  // EMBER_COMPILER_AUTOTUNE_REMOTE_TIMER_H_
