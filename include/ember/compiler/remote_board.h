/*!
 * \file ember/compiler/remote_board.h
 * \brief The board `emberc --tune --remote` measures on (reached over ssh, or adb:SERIAL).
 */
#ifndef EMBER_COMPILER_REMOTE_BOARD_H_
#define EMBER_COMPILER_REMOTE_BOARD_H_

#include <string>
#include <vector>

namespace ember::compiler {

struct RemoteBoardOptions {
  /*! \brief USER@HOST[:PORT] or adb:SERIAL; empty: no board (tune on the host). */
  std::string board;
  /*! \brief The board's working directory; empty: /tmp/ember-remote-$USER. */
  std::string remote_dir;
  /*! \brief Words put before the board's ember-run (e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu").
   */
  std::string exec_wrapper;
  /*! \brief Where board runtimes were built (see ember-run --runtime-dir); EMBER_RUNTIME_DIRS adds.
   */
  std::vector<std::string> runtime_dirs;
  /*! \brief ssh -F FILE (empty: EMBER_SSH_CONFIG, else ssh's default) and ssh -o options. */
  std::string ssh_config;
  std::vector<std::string> ssh_options;
};

}  // namespace ember::compiler

#endif  // EMBER_COMPILER_REMOTE_BOARD_H_
