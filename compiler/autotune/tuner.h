// `emberc --tune`: measures the candidate parameters of every tunable workload of a model on this
// machine and keeps the fastest in a tuning log (tuning_log.h).
//
// Per distinct workload key (tuning.h): every candidate is built on its own into a temporary
// library (a one-record log forces it), loaded through the runtime, run on fixed random inputs
// and compared with the default candidate's outputs (a candidate that disagrees is dropped with a
// warning: a wrong kernel must never win), then timed on one thread with the runtime's time
// evaluator (best of `repeat` repeats of at least `min_repeat_ms` each).
#ifndef EMBER_COMPILER_AUTOTUNE_TUNER_H_
#define EMBER_COMPILER_AUTOTUNE_TUNER_H_

#include <ember/compiler/ir/fused_group.h>

#include <ostream>
#include <string>
#include <vector>

#include "ember/compiler/lower.h"
#include "ember/compiler/target.h"
#include "tuning_log.h"

namespace ember::compiler::autotune {

class RemoteKernelTimer;

struct TuneOptions {
  /*! \brief Candidates measured per workload, the default included (0: all it lists). */
  int max_candidates = 6;
  int repeat = 3;
  int min_repeat_ms = 20;
  /*! \brief Measure workloads the log already holds for this emberc version too. */
  bool retune = false;
  /*! \brief Written into each record. */
  std::string version;
  /*! \brief Progress, one line per workload; may be null. */
  std::ostream* log = nullptr;
  /*! \brief The compile's kernel choice (the candidates are its kernels' parameters). */
  const lower::GroupScheduler* scheduler = nullptr;
  /*! \brief The linker of the compile (BuildOptions::linker). */
  std::string linker;
  /*! \brief Times candidates on this board instead of the host (emberc --tune --remote). */
  RemoteKernelTimer* remote = nullptr;
};

struct TuneReport {
  int workloads = 0;   // distinct tunable workloads of the groups
  int measured = 0;    // tuned now
  int reused = 0;      // already in the log
  int candidates = 0;  // built and timed
  int rejected = 0;    // outputs differed from the default's
  double seconds = 0;
};

/*!
 * \brief Tunes every tunable workload of `groups` for `target` (the host, or any target with
 * options.remote: a CompileError says so otherwise) and puts the winners into *log.
 */
TuneReport TuneGroups(const std::vector<FusedGroup>& groups, const Target& target,
                      const TuneOptions& options, TuningLog* log);

}  // namespace ember::compiler::autotune

#endif  // EMBER_COMPILER_AUTOTUNE_TUNER_H_
