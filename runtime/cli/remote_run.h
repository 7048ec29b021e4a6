// ember-run --remote: the same run on a board, through ember_remote's session.
#ifndef EMBER_RUNTIME_CLI_REMOTE_RUN_H_
#define EMBER_RUNTIME_CLI_REMOTE_RUN_H_

#include <string>
#include <utility>
#include <vector>

#include "remote/ssh_transport.h"

namespace ember::cli {

struct RemoteRunRequest {
  std::string board;  // USER@HOST[:PORT] or adb:SERIAL
  std::string remote_dir;
  bool keep = false;
  std::vector<std::string> runtime_dirs;
  std::string exec_wrapper;
  remote::SshOptions ssh;
  // The local run it stands for: files to copy there and back, and every other flag as given.
  std::string artifact;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, local .npy
  std::string output_dir;
  std::string trace_file;
  std::vector<std::string> flags;  // --threads N, --bench, --json, ...
};

/*! \brief ember-run's exit status: the board's ember-run's, or kTransportFailed when the board
 * could not be reached (the message names the board, the ssh argv and ssh's stderr). */
int RunRemote(const RemoteRunRequest& request, const std::string& self_exe);

/*! \brief Exit status when the board dropped or could not be reached (ember-bench retries it). */
constexpr int kTransportFailed = 3;

}  // namespace ember::cli

#endif  // EMBER_RUNTIME_CLI_REMOTE_RUN_H_
