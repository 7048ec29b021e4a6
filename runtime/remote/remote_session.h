// One working directory on a board: files copied there only when their content changed (SHA-256
// on both sides), ember-run started there (optionally through an exec wrapper such as qemu-user)
// and its outputs, printed text and status fetched back, and the directory removed at the end
// unless the user keeps it. Connections are few because each costs a key exchange (0.1-0.5 s):
// Sync takes one, plus one when something changed (a tar stream); a run and its outputs take one.
//
// Two sessions never share a directory: the first contact claims it (an atomic `mkdir .lock`
// holding the claimant's host, pid and boot id). When another session holds it, a session that
// may (WhenBusy::kUsePrivateDir) works in a fresh run-* directory inside it instead, and one
// that needs the directory's cache (--keep) stops with an error naming the holder. A claim left
// by a process of this machine that is gone is taken over.
//
// Layout under the directory (all paths below are relative to it):
//   .ember-remote            marker: the directory is ours (Clean removes only what is listed here)
//   .lock/owner              the claim: "HOST PID BOOT-ID" of the session using the directory
//   run-PID-RANDOM/          a private directory of the same layout, for a session that found
//                            the directory busy (removed by that session's Clean)
//   rt-ARCH/ember-run, rt-ARCH/libember_runtime.so.N     the board's runtime
//   art/NAME/...             an artifact (graph.json, lib.so, params.bin; or one NAME.so)
//   in/                      input .npy files
//   out/                     outputs of the last run (emptied before each run)
//   work/                    scratch for callers
#ifndef EMBER_RUNTIME_REMOTE_REMOTE_SESSION_H_
#define EMBER_RUNTIME_REMOTE_REMOTE_SESSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "board_arch.h"
#include "transport.h"

namespace ember::remote {

struct FileCopy {
  std::string local;
  std::string remote;  // relative to the session's directory
  bool executable = false;
};

struct SyncReport {
  int copied = 0;
  int unchanged = 0;
  uint64_t bytes_copied = 0;
};

struct BoardRun {
  int exit_code = -1;  // the board's ember-run's
  std::string out, err;
  std::map<std::string, std::string> files;  // what it wrote to out/, by name
};

/*! \brief What a session does when another one holds its directory. */
enum class WhenBusy {
  kUsePrivateDir,  // work in a fresh run-* directory inside it (nothing is kept anyway)
  kRefuse,         // throw BoardCommandError naming the holder (the cache must stay coherent)
};

class RemoteSession {
 public:
  /*! \param exec_wrapper words put before the board's ember-run (e.g. qemu-aarch64 -L DIR). */
  RemoteSession(const Transport& transport, std::string dir, std::vector<std::string> exec_wrapper,
                WhenBusy when_busy);
  ~RemoteSession();
  RemoteSession(const RemoteSession&) = delete;
  RemoteSession& operator=(const RemoteSession&) = delete;

  const Transport& transport() const { return transport_; }
  /*! \brief `rel` under the session's directory, as the board's shell sees it. Until Prepare or
   * Sync has claimed a directory, the one asked for (a private one may replace it). */
  std::string Path(const std::string& rel) const { return dir_ + "/" + rel; }
  /*! \brief The directory the caller named. */
  const std::string& asked_dir() const { return asked_dir_; }
  /*! \brief The claim of the session that held the asked-for directory, when this one works in
   * a private directory because of it ("HOST PID BOOT-ID"); empty otherwise. */
  const std::string& busy_holder() const { return busy_holder_; }

  /*! \brief Claims a directory and makes its subdirectories (Sync does too). */
  void Prepare();
  /*! \brief Claims a directory (first call) and copies each file whose remote copy is missing or
   * has another SHA-256. */
  SyncReport Sync(const std::vector<FileCopy>& files);
  /*! \brief The copies Sync needs for the runtime `rt` (rt-ARCH/...). */
  static std::vector<FileCopy> RuntimeFiles(const BoardRuntime& rt);
  /*! \brief The copies Sync needs for an artifact (directory or single .so) as art/NAME. */
  static std::vector<FileCopy> ArtifactFiles(const std::string& artifact, std::string* remote_rel);

  /*! \brief Empties out/, runs the board's ember-run with `args` (remote paths) and fetches
   * what it printed, its status and the files it wrote to out/. */
  BoardRun RunEmberRun(const BoardRuntime& rt, const std::vector<std::string>& args);
  /*! \brief Removes everything the layout above lists and the claim, then the directory if it
   * is empty (and the asked-for one, for a private directory). Nothing before a claim. */
  void Clean();
  /*! \brief Gives the claim up and keeps the files (--keep). */
  void Release();

 private:
  std::string LocalTemp(const std::string& name) const { return local_tmp_ + "/" + name; }
  // Runs the script `make_script` builds for the current directory, claiming one first.
  std::string ExecClaimed(const std::string& what, const std::function<std::string()>& make_script);
  std::string ClaimScript() const;
  std::string UnlockIfOwnedBy(const std::string& owner) const;

  const Transport& transport_;
  std::string asked_dir_;  // the directory the caller named
  std::string dir_;        // the one in use: asked_dir_ or a private run-* inside it
  std::vector<std::string> exec_wrapper_;
  WhenBusy when_busy_;
  std::string owner_;  // this session's claim
  bool claimed_ = false;
  std::string busy_holder_;
  std::string local_tmp_;  // the tar streams' local files
};

/*! \brief The exec wrapper's words: `text` split at spaces (e.g. "qemu-aarch64 -L /usr/x"). */
std::vector<std::string> SplitWords(const std::string& text);

}  // namespace ember::remote

#endif  // EMBER_RUNTIME_REMOTE_REMOTE_SESSION_H_
