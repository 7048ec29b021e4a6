// What every transport shares (see transport.h).
#include "transport.h"

namespace ember::remote {

ProcessResult RunOrThrow(const std::string& board, const std::vector<std::string>& argv,
                         const ProcessIo& io) {
  ProcessResult r;
  try {
    r = RunProcess(argv, io);
  } catch (const std::exception& e) {
    throw TransportError(board + ": " + e.what());
  }
  if (r.exit_code != 0) {
    std::string err = r.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == '\r')) err.pop_back();
    throw TransportError(board + ": " + argv[0] + " failed (exit " + std::to_string(r.exit_code) +
                         "): " + (err.empty() ? "(no message)" : err) +
                         "; command: " + DescribeArgv(argv));
  }
  return r;
}

}  // namespace ember::remote
