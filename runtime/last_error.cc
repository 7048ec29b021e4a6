// The thread-local "last error" behind TVMGetLastError: every C entry point that fails stores its
// message here before returning -1.
#include <ember/runtime/c_runtime_api.h>

#include <string>

namespace {
std::string& LastErrorString() {
  thread_local std::string last_error;
  return last_error;
}
}  // namespace

void TVMAPISetLastError(const char* msg) { LastErrorString() = msg ? msg : ""; }

const char* TVMGetLastError(void) { return LastErrorString().c_str(); }
