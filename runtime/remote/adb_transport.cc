// adb transport (see adb_transport.h).
#include "adb_transport.h"

#include "shell_quote.h"

namespace ember::remote {

std::vector<std::string> AdbTransport::AdbArgv(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"adb", "-s", serial_};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

ProcessResult AdbTransport::DoExec(const std::vector<std::string>& argv,
                                   const ProcessIo& io) const {
  // adb shell hands its one argument to the device's sh, as ssh does; adb (>= 1.0.36, Android 7)
  // returns the command's status. adb's own failures (no such device) exit 1 and say "adb: ".
  std::string mode = !io.stdin_path.empty()    ? "exec-in"
                     : !io.stdout_path.empty() ? "exec-out"
                                               : "shell";
  std::vector<std::string> local = AdbArgv({mode, ShellJoin(argv)});
  ProcessResult r;
  try {
    r = RunProcess(local, io);
  } catch (const std::exception& e) {
    throw TransportError(Name() + ": " + e.what());
  }
  if (r.exit_code != 0 && r.err.rfind("adb: ", 0) == 0) {
    throw TransportError(Name() + ": adb failed (exit " + std::to_string(r.exit_code) +
                         "): " + r.err + "; command: " + DescribeArgv(local));
  }
  return r;
}

}  // namespace ember::remote
