// A board reached with the user's OpenSSH client: ssh runs everything, with the user's config,
// agent and known_hosts. Nothing here loosens host-key checking; options the user passes
// (--ssh-option, an ssh config file) are handed to ssh unchanged.
#ifndef EMBER_RUNTIME_REMOTE_SSH_TRANSPORT_H_
#define EMBER_RUNTIME_REMOTE_SSH_TRANSPORT_H_

#include <string>
#include <vector>

#include "transport.h"

namespace ember::remote {

struct SshOptions {
  /*! \brief An ssh config file (ssh -F); empty: the user's ~/.ssh/config. */
  std::string config_file;
  /*! \brief Extra ssh options, each passed as "-o OPTION" (e.g. "UserKnownHostsFile=..."). */
  std::vector<std::string> options;
};

/*! \brief USER@HOST[:PORT] or HOST[:PORT] split into ssh's destination and port ("" when none);
 * an IPv6 address as USER@[ADDR]:PORT, or bare without a port. Throws std::invalid_argument
 * naming `spec` and the expected form. */
struct SshDestination {
  std::string host;  // with USER@ when given
  std::string port;
  static SshDestination Parse(const std::string& spec);
};

class SshTransport : public Transport {
 public:
  SshTransport(const std::string& spec, SshOptions options);
  std::string Name() const override { return spec_; }
  /*! \brief The local argv that runs `remote_command` (one shell line) on the board. */
  std::vector<std::string> SshArgv(const std::string& remote_command) const;

 protected:
  ProcessResult DoExec(const std::vector<std::string>& argv, const ProcessIo& io) const override;

 private:
  std::string spec_;
  SshDestination dest_;
  SshOptions options_;
};

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_SSH_TRANSPORT_H_
