/*!
 * \file ember/compiler/driver.h
 * \brief The whole pipeline: ONNX file -> OUTDIR/{graph.json, lib.so, params.bin}.
 */
#ifndef EMBER_COMPILER_DRIVER_H_
#define EMBER_COMPILER_DRIVER_H_

#include <ember/compiler/remote_board.h>
#include <ember/compiler/strategy.h>

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

struct CompileOptions {
  std::string model_path;
  std::string out_dir;
  std::string target;  // "" or "llvm ..." ; empty means the host
  int opt_level = 3;
  std::map<std::string, std::vector<int64_t>> input_shapes;
  /*! \brief --bind NAME=VALUE: inputs fixed at compile time (see ImportOptions::bindings). */
  std::map<std::string, std::string> bindings;
  bool system_lib = false;
  std::string dump_dir;  // --dump-ir: graph after each pass, as .txt and .dot
  bool verbose = false;  // -v: pass timings and memory figures on `log`
  std::ostream* log = nullptr;
  /*! \brief --tune: measure the schedules' candidates for every tunable workload on this machine
   * (host target only), merge the winners into the tuning log, then compile with them. */
  bool tune = false;
  /*! \brief --tuning-log: winners to compile with (and, with tune, the file to update; default
   * DefaultTuningLogPath(out_dir)). */
  std::string tuning_log;
  int tune_candidates = 6;  // per workload, the default included (0: every candidate)
  int tune_repeat = 3;      // timed repeats per candidate (best taken)
  /*! \brief --remote: the board to tune on (its CPU names the tuning log's records; without
   * --tune the compile reads that board's records). */
  RemoteBoardOptions remote;
  /*! \brief --fleet: a hosts file (runtime/remote/hosts_file.h); with --tune, every board of
   * the target's architecture measures in turn (boards with one CPU once), and the artifact is
   * compiled with the first board's records. */
  std::string fleet_file;
  /*! \brief --jobs: threads that optimise and emit kernels; 0: one per hardware thread. */
  int jobs = 0;
  /*! \brief The kernel choice's knobs; unset: StrategyOptionsFromEnvironment(). */
  std::optional<StrategyOptions> strategy;
};

/*! \brief The knobs of the kernel choice from the environment, where tests and benchmarks set
 *  them: EMBER_DISABLE_SCHEDULES=1 (default schedule only), EMBER_SCHEDULE=NAME (force one table
 *  entry), EMBER_KEEP_NCHW=1 (no blocked layout), EMBER_NO_WINOGRAD=1 (direct 3 x 3 convs). */
StrategyOptions StrategyOptionsFromEnvironment();

/*! \brief $EMBER_LLD, the ld.lld to link kernels with, or "" (the one found at build time). */
std::string LinkerFromEnvironment();

struct CompileStats {
  int num_nodes = 0;    // after passes
  int num_kernels = 0;  // fused groups
  int64_t activation_bytes = 0;
  int64_t activation_bytes_no_reuse = 0;
  int64_t params_bytes = 0;
  double total_ms = 0;
  int tuned_workloads = 0;  // measured by --tune in this compile
  int tuning_log_used = 0;  // workloads compiled with a winner from the tuning log
  double tune_seconds = 0;  // time --tune spent measuring
};

/*! \brief Name of the library file for the options (lib.so, or lib.o with system_lib). */
std::string LibraryFileName(bool system_lib);

/*! \brief $XDG_CACHE_HOME/ember/tuning.log, else ~/.cache/ember/tuning.log, else (no HOME)
 * OUTDIR/tuning.log. */
std::string DefaultTuningLogPath(const std::string& out_dir);

/*! \brief Runs the pipeline; throws CompileError (or std::runtime_error from code generation). */
CompileStats Compile(const CompileOptions& options);

/*! \brief Parses "name=16000;other=1,2" (';'-separated --bind specs, may be empty). */
std::map<std::string, std::string> ParseBindingList(const std::string& specs);

/*! \brief Parses "name=1,3;other=2" (';'-separated --input-shape specs, may be empty). */
std::map<std::string, std::vector<int64_t>> ParseInputShapeList(const std::string& specs);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_DRIVER_H_
