// Which workers a launch waits for. A worker whose task ends long after the launcher ended its
// own was descheduled mid-task: another process runs on its core (a phone's UI thread, a busy
// board, a loaded VM host). Chunks it has not started go to the other threads, but the chunk it
// holds cannot, so every launch it takes part in can wait a whole time slice for it. Such a
// worker sits out the launches of a back-off period (the pool runs with fewer threads), is tried
// again after it, and sits out twice as long each time it is late again, up to a cap. A long
// enough series of launches it finishes on time forgets its record.
#ifndef EMBER_RUNTIME_LATE_WORKER_H_
#define EMBER_RUNTIME_LATE_WORKER_H_

#include <algorithm>
#include <cstdint>

namespace ember::runtime::threading {

/*! \brief The thresholds, in nanoseconds and launches. */
struct LateWorkerLimits {
  // A worker is late when it ends more than the launcher's own busy time plus this after the
  // launcher: chunks from a shared counter keep a running worker within one chunk of it.
  uint64_t slack_ns = 200'000;
  uint64_t first_backoff_ns = 10'000'000;
  uint64_t max_backoff_ns = 1'000'000'000;  // 0 turns the policy off: every worker always runs
  uint32_t on_time_to_forget = 256;
};

/*! \brief One worker's record; the launcher owns it (read and written under the pool's lock). */
class LateWorker {
 public:
  /*! \brief Whether a launch at now_ns posts to this worker. */
  bool Available(uint64_t now_ns) const { return now_ns >= benched_until_ns_; }

  /*!
   * \brief Records a launch this worker took part in: the launcher ran its tasks for
   *        launcher_busy_ns and the worker ended late_by_ns after it (0 when before).
   * \return whether the worker now sits out launches until BenchedUntil().
   */
  bool Record(const LateWorkerLimits& limits, uint64_t now_ns, uint64_t launcher_busy_ns,
              uint64_t late_by_ns) {
    if (limits.max_backoff_ns == 0 || late_by_ns <= launcher_busy_ns + limits.slack_ns) {
      if (backoff_ns_ != 0 && ++on_time_ >= limits.on_time_to_forget) Forget();
      return false;
    }
    backoff_ns_ = backoff_ns_ == 0 ? limits.first_backoff_ns : backoff_ns_ * 2;
    backoff_ns_ = std::min(backoff_ns_, limits.max_backoff_ns);
    benched_until_ns_ = now_ns + backoff_ns_;
    on_time_ = 0;
    ++times_late_;
    return true;
  }

  void Forget() {
    backoff_ns_ = 0;
    benched_until_ns_ = 0;
    on_time_ = 0;
  }

  uint64_t BenchedUntil() const { return benched_until_ns_; }
  uint64_t times_late() const { return times_late_; }

 private:
  uint64_t backoff_ns_ = 0;  // the last period sat out; 0 = no record
  uint64_t benched_until_ns_ = 0;
  uint32_t on_time_ = 0;  // launches ended on time since the last late one
  uint64_t times_late_ = 0;
};

}  // namespace ember::runtime::threading

#endif  // EMBER_RUNTIME_LATE_WORKER_H_
