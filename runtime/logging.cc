// Where logged lines go and how the C boundary turns an exception into -1.
#include <ember/runtime/logging.h>

#include <cstdio>

#include "minimal.h"

namespace ember::runtime::detail {

FatalThrower::FatalThrower() = default;

FatalThrower::FatalThrower(const char* failed_check) : failed_check_(failed_check) {}

FatalThrower::FatalThrower(std::unique_ptr<std::string> failed_comparison)
    : failed_comparison_(std::move(failed_comparison)) {}

// Users read the sentence the check site wrote, not the condition behind it; a comparison's
// values are facts worth keeping.
FatalThrower::~FatalThrower() noexcept(false) {
  std::string message = stream_.str();
  const std::string failed =
      failed_comparison_ ? *failed_comparison_ : std::string(failed_check_ ? failed_check_ : "");
  if (failed.empty()) throw Error(message);
  if (message.empty()) throw Error("internal check failed: " + failed);
  if (failed_comparison_) message += " (" + failed + ")";
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
              "out .npy files, profiling, the debug executor, the executor pool, registry listing "
              "and DLPack import; use the default build of libember_runtime");
}

}  // namespace ember::runtime
