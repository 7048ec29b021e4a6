// The tuning log: winning schedule parameters per workload, measured by `emberc --tune` and reused
// by later compiles (`--tuning-log FILE`).
//
// File format (UTF-8 text, one record per line, '\n' line ends, fields separated by one TAB):
//
//   # ember tuning log v1                                    <- '#' lines and blank lines: ignored
//   KEY \t PARAMS \t TIME_MS \t EMBER_VERSION
//
//   KEY      the workload as a schedule describes it: schedule name, shape and target, e.g.
//            "conv2d_nchw_wide_avx512 f32 n1 c64 h56 w56 oc64 o56x56 k3x3 s1x1 p1x1 g1
//            target=x86_64-pc-linux-gnu:sapphirerapids" (no TAB, no control characters)
//   PARAMS   the winning parameter set, "name=int" joined by ',' (names: [a-z0-9_]+, sorted),
//            e.g. "lanes=32,oc_block=8"
//   TIME_MS  the winner's measured time per call in milliseconds (>= 0, decimal)
//   EMBER_VERSION  the emberc version that measured it, e.g. "0.1.0"
//
// A key appears once in a saved file; when a hand-merged file repeats a key, the later line wins.
// Any other line is an error naming the file, the line number and what was expected.
#ifndef EMBER_COMPILER_AUTOTUNE_TUNING_LOG_H_
#define EMBER_COMPILER_AUTOTUNE_TUNING_LOG_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace ember::compiler::autotune {

/*! \brief A schedule's tunable parameters by name (e.g. lanes, oc_block). */
using ParamSet = std::map<std::string, int64_t>;

/*! \brief "a=1,b=2" (names in map order). */
std::string ParamSetToString(const ParamSet& p);

struct TuningRecord {
  std::string key;
  ParamSet params;
  double time_ms = 0;
  std::string version;
};

class TuningLog {
 public:
  /*! \brief Parses the text of a log; `name` (the file) and line numbers head every error. Throws
   * CompileError on a malformed line. */
  static TuningLog Parse(const std::string& text, const std::string& name);
  /*! \brief Reads and parses `path`; throws CompileError when it cannot be read. */
  static TuningLog Load(const std::string& path);
  /*! \brief Load(path) when the file exists, else an empty log remembering the path. */
  static TuningLog LoadIfExists(const std::string& path);

  /*! \brief The record for `key`, or nullptr. */
  const TuningRecord* Find(const std::string& key) const;
  /*! \brief Adds or replaces the record of r.key. */
  void Put(TuningRecord r);
  /*! \brief Put for every record of `other` (other wins on equal keys). */
  void Merge(const TuningLog& other);
  /*! \brief The file text (header line, then records sorted by key). */
  std::string ToText() const;
  /*! \brief Writes ToText() to `path` through a temporary file and a rename, creating the parent
   * directory; throws CompileError naming the file on failure. */
  void Save(const std::string& path) const;

  size_t size() const { return records_.size(); }
  const std::string& path() const { return path_; }

  /*! \brief Schedules note the keys whose params they took from the log (for emberc -v). */
  void NoteUsed(const std::string& key) const { used_.insert(key); }
  const std::set<std::string>& used() const { return used_; }

 private:
  std::map<std::string, TuningRecord> records_;
  std::string path_;
  mutable std::set<std::string> used_;
};

}  // namespace ember::compiler::autotune

#endif  // EMBER_COMPILER_AUTOTUNE_TUNING_LOG_H_
