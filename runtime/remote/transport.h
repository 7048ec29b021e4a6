// How the host reaches a board: run a command there, with stdin from a local file and stdout to
// one when asked (files travel as tar streams through that, see remote_session.h). OpenSSH
// (ssh_transport.h) and adb (adb_transport.h) implement it; everything above speaks only this.
#ifndef EMBER_RUNTIME_REMOTE_TRANSPORT_H_
#define EMBER_RUNTIME_REMOTE_TRANSPORT_H_

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "process.h"

namespace ember::remote {

/*! \brief The board could not be reached or the copy failed (not: the board's command failed).
 * The message names the board, the local command's argv and its stderr. */
struct TransportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/*! \brief The board was reached but a command of ours failed there (a full disk, no tar). */
struct BoardCommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Transport {
 public:
  virtual ~Transport() = default;
  /*! \brief The board as the user named it, e.g. "pi@raspberrypi:2222" or "adb:R58M123". */
  virtual std::string Name() const = 0;
  /*! \brief Runs `argv` on the board (each word quoted for the board's shell) and returns its
   * status and output; `io` names local files for its stdin and stdout. Throws TransportError
   * when the board cannot be reached. */
  ProcessResult Exec(const std::vector<std::string>& argv, const ProcessIo& io = {}) const {
    return DoExec(argv, io);
  }

 protected:
  virtual ProcessResult DoExec(const std::vector<std::string>& argv, const ProcessIo& io) const = 0;
};

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_TRANSPORT_H_
