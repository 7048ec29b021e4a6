// OpenSSH transport (see ssh_transport.h). Files travel as tar streams on ssh's stdin and stdout
// rather than through scp, so a board needs no sftp server (dropbear, busybox) and paths are
// quoted one way only.
#include "ssh_transport.h"

#include <stdexcept>

#include "shell_quote.h"

namespace ember::remote {

namespace {

// ssh's own status when the connection failed (the board's command never exits 255 here).
constexpr int kSshConnectionFailed = 255;

}  // namespace

SshDestination SshDestination::Parse(const std::string& spec) {
  SshDestination d;
  d.host = spec;
  // IPv6: [ADDR]:PORT or [ADDR] (brackets dropped for ssh), or a bare ADDR with its colons.
  size_t at_sign = spec.find('@');
  size_t host_at = at_sign == std::string::npos ? 0 : at_sign + 1;
  std::string user = spec.substr(0, host_at);
  size_t colon = std::string::npos;
  if (spec.compare(host_at, 1, "[") == 0) {
    size_t close = spec.find(']', host_at);
    if (close == std::string::npos || (close + 1 < spec.size() && spec[close + 1] != ':')) {
      throw std::invalid_argument("--remote " + spec + ": expected USER@[IPV6]:PORT");
    }
    d.host = user + spec.substr(host_at + 1, close - host_at - 1);
    if (close + 1 < spec.size()) colon = close + 1;
  } else if (spec.find(':', host_at) == spec.rfind(':')) {
    colon = spec.rfind(':');
  }
  if (colon != std::string::npos) {
    if (spec[host_at] != '[') d.host = spec.substr(0, colon);
    d.port = spec.substr(colon + 1);
    bool digits = !d.port.empty() && d.port.size() <= 5 &&
                  d.port.find_first_not_of("0123456789") == std::string::npos;
    if (!digits || std::stoi(d.port) < 1 || std::stoi(d.port) > 65535) {
      throw std::invalid_argument("--remote " + spec + ": expected USER@HOST[:PORT] with PORT in " +
                                  "1..65535, got port \"" + d.port + "\"");
    }
  }
  size_t at = d.host.find('@');
  std::string host_only = at == std::string::npos ? d.host : d.host.substr(at + 1);
  // A leading '-' would reach ssh as an option.
  if (host_only.empty() || d.host[0] == '-' || (at != std::string::npos && at == 0)) {
    throw std::invalid_argument("--remote " + spec + ": expected USER@HOST[:PORT] or HOST[:PORT]");
  }
  return d;
}

SshTransport::SshTransport(const std::string& spec, SshOptions options)
    : spec_(spec), dest_(SshDestination::Parse(spec)), options_(std::move(options)) {}

std::vector<std::string> SshTransport::SshArgv(const std::string& remote_command) const {
  std::vector<std::string> argv = {"ssh"};
  if (!options_.config_file.empty()) argv.insert(argv.end(), {"-F", options_.config_file});
  for (const std::string& o : options_.options) argv.insert(argv.end(), {"-o", o});
  if (!dest_.port.empty()) argv.insert(argv.end(), {"-p", dest_.port});
  argv.insert(argv.end(), {"--", dest_.host, remote_command});
  return argv;
}

ProcessResult SshTransport::DoExec(const std::vector<std::string>& argv,
                                   const ProcessIo& io) const {
  std::vector<std::string> local = SshArgv(ShellJoin(argv));
  ProcessResult r;
  try {
    r = RunProcess(local, io);
  } catch (const std::exception& e) {
    throw TransportError(spec_ + ": " + e.what());
  }
  if (r.exit_code == kSshConnectionFailed) {
    std::string err = r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    throw TransportError(spec_ +
                         ": ssh failed (exit 255): " + (err.empty() ? "(no message)" : err) +
                         "; command: " + DescribeArgv(local));
  }
  return r;
}

}  // namespace ember::remote
