// Where logged lines go and how the C boundary turns an exception into -1.
#include <ember/runtime/logging.h>

#include <cstdio>

namespace ember::runtime::detail {

FatalThrower::FatalThrower() = default;

FatalThrower::~FatalThrower() noexcept(false) { throw Error(stream_.str()); }

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
