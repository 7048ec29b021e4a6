// Claims of board directories (see dir_claim.h).
#include "dir_claim.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <fstream>
#include <sstream>

namespace ember::remote {

namespace {

struct Claim {
  std::string host, boot;
  long pid = 0;
};

bool Parse(const std::string& text, Claim* c) {
  std::istringstream in(text);
  std::string extra;
  return static_cast<bool>(in >> c->host >> c->pid >> c->boot) && !(in >> extra) && c->pid > 0;
}

std::string HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "unknown-host";
  return name;
}

// Differs after each boot; "-" where the kernel does not say (then nothing is ever stale).
std::string BootId() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  return (f >> id) ? id : "-";
}

}  // namespace

std::string ThisProcessClaim() {
  return HostName() + " " + std::to_string(getpid()) + " " + BootId();
}

bool ClaimIsStale(const std::string& claim) {
  Claim c;
  if (!Parse(claim, &c) || c.boot == "-" || c.host != HostName() || c.boot != BootId()) {
    return false;
  }
  return kill(static_cast<pid_t>(c.pid), 0) != 0 && errno == ESRCH;
}

std::string DescribeClaim(const std::string& claim) {
  Claim c;
  if (!Parse(claim, &c)) return "an unnamed session";
  return c.host + " pid " + std::to_string(c.pid);
}

}  // namespace ember::remote
