// Board spec to transport (see board_transport.h).
#include "board_transport.h"

#include <cstdlib>

#include "adb_transport.h"

namespace ember::remote {

namespace {

constexpr const char* kAdbPrefix = "adb:";

bool IsAdb(const std::string& spec) { return spec.rfind(kAdbPrefix, 0) == 0; }

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
  const char* user = std::getenv("USER");
  return std::string("/tmp/ember-remote-") + (user != nullptr && *user ? user : "user");
}

SshOptions SshOptionsFromEnvironment() {
  SshOptions o;
  const char* config = std::getenv("EMBER_SSH_CONFIG");
  if (config != nullptr) o.config_file = config;
  return o;
}

}  // namespace ember::remote
