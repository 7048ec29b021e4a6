// The hosts file of a fleet (ember-bench --hosts, emberc --tune --fleet): one board per line,
// '#' starts a comment, blank lines are ignored:
//
//   NAME  DESTINATION  TARGET  THREADS  [EXEC-WRAPPER...]
//   pi4-a pi@10.0.0.7  aarch64-linux-gnu 1,4
//
// DESTINATION is what ember-run --remote takes (USER@HOST[:PORT] or adb:SERIAL), TARGET the
// board's target triple, THREADS a comma list of thread counts, and the rest of the line the
// board's --remote-exec-wrapper. runtime/cli/ember_bench.py reads the same format.
#ifndef EMBER_RUNTIME_REMOTE_HOSTS_FILE_H_
#define EMBER_RUNTIME_REMOTE_HOSTS_FILE_H_

#include <string>
#include <vector>

namespace ember::remote {

struct FleetBoard {
  std::string name;
  std::string destination;
  std::string triple;
  std::vector<int> threads;
  std::string exec_wrapper;
};

/*! \brief Parses the text of a hosts file; errors name `path`, the line and what was expected. */
std::vector<FleetBoard> ParseHostsFile(const std::string& text, const std::string& path);

/*! \brief Reads and parses `path`; throws std::runtime_error naming it when unreadable. */
std::vector<FleetBoard> LoadHostsFile(const std::string& path);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_HOSTS_FILE_H_
