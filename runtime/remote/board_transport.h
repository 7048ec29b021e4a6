// The transport for a board spec: "adb:SERIAL" is an Android device, anything else an ssh
// destination USER@HOST[:PORT].
#ifndef EMBER_RUNTIME_REMOTE_BOARD_TRANSPORT_H_
#define EMBER_RUNTIME_REMOTE_BOARD_TRANSPORT_H_

#include <memory>
#include <string>

#include "ssh_transport.h"

namespace ember::remote {

std::unique_ptr<Transport> MakeTransport(const std::string& spec, const SshOptions& ssh);

/*! \brief Where a board keeps Ember's files unless --remote-dir says otherwise:
 * /tmp/ember-remote-USER (USER the local user), /data/local/tmp/ember-remote on Android. */
std::string DefaultRemoteDir(const std::string& spec);

/*! \brief SshOptions with the config file from EMBER_SSH_CONFIG when set. */
SshOptions SshOptionsFromEnvironment();

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_BOARD_TRANSPORT_H_
