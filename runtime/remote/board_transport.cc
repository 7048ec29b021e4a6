// Board spec to transport (see board_transport.h).
#include "board_transport.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

#include "adb_transport.h"

namespace ember::remote {

namespace {

constexpr const char* kAdbPrefix = "adb:";

bool IsAdb(const std::string& spec) { return spec.rfind(kAdbPrefix, 0) == 0; }

// The local user's name, so two users sharing a board keep apart (USER is unset under cron).
std::string LocalUser() {
  const char* user = std::getenv("USER");
  if (user != nullptr && *user) return user;
  const struct passwd* pw = getpwuid(getuid());
  return pw != nullptr ? pw->pw_name : "uid" + std::to_string(getuid());
}

}  // namespace

std::unique_ptr<Transport> MakeTransport(const std::string& spec, const SshOptions& ssh) {
  if (IsAdb(spec)) {
    std::string serial = spec.substr(std::string(kAdbPrefix).size());
    if (serial.empty() || serial[0] == '-') {
      throw std::invalid_argument("--remote " + spec + ": expected adb:SERIAL (see `adb devices`)");
    }
    return std::make_unique<AdbTransport>(serial);
  }
  return std::make_unique<SshTransport>(spec, ssh);
}

std::string DefaultRemoteDir(const std::string& spec) {
  if (IsAdb(spec)) return "/data/local/tmp/ember-remote";
  return "/tmp/ember-remote-" + LocalUser();
}

SshOptions SshOptionsFromEnvironment() {
  SshOptions o;
  const char* config = std::getenv("EMBER_SSH_CONFIG");
  if (config != nullptr) o.config_file = config;
  return o;
}

}  // namespace ember::remote
