// How the host reaches a board: run a command there, copy a file there and back. OpenSSH
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

class Transport {
 public:
  virtual ~Transport() = default;
  /*! \brief The board as the user named it, e.g. "pi@raspberrypi:2222" or "adb:R58M123". */
  virtual std::string Name() const = 0;
  /*! \brief Runs `argv` on the board (each word quoted for the board's shell) and returns its
   * status and output; throws TransportError when the board cannot be reached. */
  virtual ProcessResult Exec(const std::vector<std::string>& argv) const = 0;
  /*! \brief Copies the local file to `remote_path` (made executable when `executable`). */
  virtual void Push(const std::string& local_path, const std::string& remote_path,
                    bool executable) const = 0;
  /*! \brief Copies `remote_path` from the board to the local file. */
  virtual void Pull(const std::string& remote_path, const std::string& local_path) const = 0;
};

/*! \brief Runs `argv` locally and throws TransportError for `board` unless it exits 0. */
ProcessResult RunOrThrow(const std::string& board, const std::vector<std::string>& argv,
                         const ProcessIo& io = {});

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_TRANSPORT_H_
