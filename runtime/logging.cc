// Where logged lines go and how the C boundary turns an exception into -1.
#include <ember/runtime/logging.h>

#include <cstdio>

#include "minimal.h"

namespace ember::runtime::detail {

FatalThrower::FatalThrower() = default;

FatalThrower::FatalThrower(std::string failed_check, bool append_to_message)
    : failed_check_(std::move(failed_check)), append_to_message_(append_to_message) {}

// Users read the sentence the check site wrote, not the condition behind it; a comparison's
// values are facts worth keeping.
FatalThrower::~FatalThrower() noexcept(false) {
  std::string message = stream_.str();
  if (failed_check_.empty()) throw Error(message);
  if (message.empty()) throw Error("internal check failed: " + failed_check_);
  if (append_to_message_) message += " (" + failed_check_ + ")";
  throw Error(message);
}

LogLine::LogLine(const char* level, const char* file, int line) {
  // Only the base name: full build paths are noise in a user's terminal.
  const char* base = file;
  for (const char* p = file; *p != '\0'; ++p) {
    if (*p == '/') base = p + 1;
  }
  stream_ << "[ember " << level << "] " << base << ":" << line << ": ";
}

LogLine::~LogLine() {
  stream_ << '\n';
  std::fputs(stream_.str().c_str(), stderr);
}

int HandleApiException(const std::exception& e) noexcept {
  TVMAPISetLastError(e.what());
  return -1;
}

int HandleUnknownApiException() noexcept {
  TVMAPISetLastError("unknown C++ exception (not derived from std::exception)");
  return -1;
}

}  // namespace ember::runtime::detail

namespace ember::runtime {

void ThrowNotInMinimalRuntime(const char* what) {
  throw Error(std::string(what) +
              " is not in this runtime: it was built with EMBER_RUNTIME_MINIMAL=ON, which leaves "
              "out .npy files, profiling, the debug executor, registry listing and DLPack import; "
              "use the default build of libember_runtime");
}

}  // namespace ember::runtime
