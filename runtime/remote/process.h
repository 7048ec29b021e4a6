// Running a local program (ssh, adb, tar) with an argv, never through a shell.
#ifndef EMBER_RUNTIME_REMOTE_PROCESS_H_
#define EMBER_RUNTIME_REMOTE_PROCESS_H_

#include <string>
#include <vector>

namespace ember::remote {

struct ProcessResult {
  int exit_code = -1;  // the program's status; 128 + N when signal N ended it
  std::string out;     // stdout, unless it went to a file
  std::string err;     // stderr
};

struct ProcessIo {
  /*! \brief A file to read stdin from; empty: /dev/null. */
  std::string stdin_path;
  /*! \brief A file stdout is written to (created or truncated); empty: captured in out. */
  std::string stdout_path;
};

/*! \brief Runs argv[0] (looked up on PATH) with `argv` and waits for it. Throws std::runtime_error
 * naming the program when it cannot be started or a file of `io` cannot be opened. */
ProcessResult RunProcess(const std::vector<std::string>& argv, const ProcessIo& io = {});

/*! \brief argv as one line for error messages (each word shell-quoted, so it can be pasted). */
std::string DescribeArgv(const std::vector<std::string>& argv);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_PROCESS_H_
