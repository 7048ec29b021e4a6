// The compiler's knobs that tests, benchmarks and odd installations set in the environment. The
// only place the compiler reads them; passes, schedules and codegen get them as options.
#include <ember/compiler/driver.h>

#include <cstdlib>
#include <cstring>

namespace ember {
namespace compiler {
namespace {

// Set to anything but "" or "0".
bool FlagSet(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace

StrategyOptions StrategyOptionsFromEnvironment() {
  StrategyOptions o;
  o.schedules = !FlagSet("EMBER_DISABLE_SCHEDULES");
  const char* forced = std::getenv("EMBER_SCHEDULE");
  if (forced != nullptr) o.forced_schedule = forced;
  o.blocked_layout = !FlagSet("EMBER_KEEP_NCHW");
  o.winograd = !FlagSet("EMBER_NO_WINOGRAD");
  o.fuse_expansions = !FlagSet("EMBER_NO_EXPAND_FUSION");
  return o;
}

std::string LinkerFromEnvironment() {
  const char* lld = std::getenv("EMBER_LLD");
  return lld != nullptr ? lld : "";
}

}  // namespace compiler
}  // namespace ember
