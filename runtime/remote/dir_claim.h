// Who holds a board directory: one line "HOST PID BOOT-ID" written by the session that claimed
// it (remote_session.h). The boot id tells a reused pid after a reboot from the same process.
#ifndef EMBER_RUNTIME_REMOTE_DIR_CLAIM_H_
#define EMBER_RUNTIME_REMOTE_DIR_CLAIM_H_

#include <string>

namespace ember::remote {

/*! \brief This process's claim: its host name, pid and the kernel's boot id. */
std::string ThisProcessClaim();

/*! \brief True when `claim` was made on this machine, since its last boot, by a process that
 * is gone: nobody will give it up, so it may be taken over. Unreadable claims are not stale. */
bool ClaimIsStale(const std::string& claim);

/*! \brief "HOST pid PID" for messages, or "an unnamed session" for an empty or odd claim. */
std::string DescribeClaim(const std::string& claim);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_DIR_CLAIM_H_
