// A working directory on a board (see remote_session.h).
#include "remote_session.h"

#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>

#include "dir_claim.h"
#include "sha256.h"
#include "shell_quote.h"
#include "tar.h"

namespace ember::remote {

namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = ".ember-remote";
constexpr const char* kLock = ".lock";
// The first line the claim script prints: the directory is now ours, or another session's.
constexpr const char* kClaimed = "ember-dir: claimed";
constexpr const char* kBusy = "ember-dir: busy";
// A stale claim is taken over at most this often before the session gives up.
constexpr int kClaimAttempts = 3;
constexpr const char* kSubdirs[] = {"art", "in", "out", "work"};
constexpr size_t kSha256HexDigits = 64;
// What the board's run leaves beside its outputs: its stdout, stderr and exit status.
constexpr const char* kStdout = ".stdout";
constexpr const char* kStderr = ".stderr";
constexpr const char* kStatus = ".status";

// "HASH  PATH" lines of sha256sum (busybox and toybox print the same), by path.
std::map<std::string, std::string> ParseSha256Sum(const std::string& text) {
  std::map<std::string, std::string> hashes;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() < kSha256HexDigits + 2) continue;
    std::string path = line.substr(kSha256HexDigits + 2);  // " *" (binary) or "  " (text)
    hashes[path] = line.substr(0, kSha256HexDigits);
  }
  return hashes;
}

std::string ThrowIfFailed(const Transport& t, const std::string& what, const ProcessResult& r) {
  if (r.exit_code == 0) return r.out;
  throw BoardCommandError(t.Name() + ": " + what + " failed on the board (exit " +
                          std::to_string(r.exit_code) + "): " + r.err);
}

std::string MakeLocalTemp() {
  std::string tmpl = (fs::temp_directory_path() / "ember_remote_XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary directory under " +
                             fs::temp_directory_path().string());
  }
  return tmpl;
}

// run-PID-RANDOM: unique among this machine's sessions (pid) and other machines' (64 random bits).
std::string PrivateDirName() {
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char hex[17];
  snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(r));
  return "run-" + std::to_string(getpid()) + "-" + hex;
}

// The text after the first line (the claim script's verdict).
std::string AfterFirstLine(const std::string& text) {
  size_t nl = text.find('\n');
  return nl == std::string::npos ? "" : text.substr(nl + 1);
}

}  // namespace

std::vector<std::string> SplitWords(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  std::string w;
  while (in >> w) words.push_back(w);
  return words;
}

RemoteSession::RemoteSession(const Transport& transport, std::string dir,
                             std::vector<std::string> exec_wrapper, WhenBusy when_busy)
    : transport_(transport),
      asked_dir_(std::move(dir)),
      exec_wrapper_(std::move(exec_wrapper)),
      when_busy_(when_busy),
      owner_(ThisProcessClaim()),
      local_tmp_(MakeLocalTemp()) {
  while (asked_dir_.size() > 1 && asked_dir_.back() == '/') asked_dir_.pop_back();
  dir_ = asked_dir_;
}

RemoteSession::~RemoteSession() {
  std::error_code ec;
  fs::remove_all(local_tmp_, ec);
}

// Prints kClaimed and goes on when `mkdir .lock` succeeds; prints kBusy and the holder's claim
// and stops otherwise. mkdir -p is tried twice: another session's Clean may remove the parent
// between its components.
std::string RemoteSession::ClaimScript() const {
  std::string dir = ShellQuote(asked_dir_), lock = ShellQuote(asked_dir_ + "/" + kLock);
  return "{ mkdir -p -- " + dir + " || mkdir -p -- " + dir + "; } && if mkdir -- " + lock +
         " 2>/dev/null; then echo " + ShellQuote(owner_) + " >" + lock + "/owner && echo '" +
         kClaimed + "'; else echo '" + kBusy + "'; cat -- " + lock +
         "/owner 2>/dev/null; exit 0; fi";
}

// Removes the claim if `owner` still holds it (another session may have taken it over since).
std::string RemoteSession::UnlockIfOwnedBy(const std::string& owner) const {
  std::string lock = ShellQuote(asked_dir_ + "/" + kLock);
  return "if [ \"$(cat -- " + lock + "/owner 2>/dev/null)\" = " + ShellQuote(owner) +
         " ]; then rm -rf -- " + lock + "; fi";
}

std::string RemoteSession::ExecClaimed(const std::string& what,
                                       const std::function<std::string()>& make_script) {
  auto exec = [&](const std::string& script) {
    return ThrowIfFailed(transport_, what, transport_.Exec({"sh", "-c", script}));
  };
  if (claimed_) return exec(make_script());
  for (int attempt = 0; attempt < kClaimAttempts; ++attempt) {
    std::string out = exec(ClaimScript() + " && " + make_script());
    if (out.rfind(kClaimed, 0) == 0) {
      claimed_ = true;
      return AfterFirstLine(out);
    }
    std::string holder = AfterFirstLine(out);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == '\r')) holder.pop_back();
    if (ClaimIsStale(holder)) {
      exec(UnlockIfOwnedBy(holder));
      continue;
    }
    if (when_busy_ == WhenBusy::kRefuse) {
      throw BoardCommandError(transport_.Name() + ": " + asked_dir_ + " is in use by " +
                              DescribeClaim(holder) +
                              " (another ember-run, ember-bench or emberc --tune session). Wait "
                              "for it, give another --remote-dir, or, if that session is gone, "
                              "remove " +
                              asked_dir_ + "/" + kLock + " on the board");
    }
    busy_holder_ = holder;
    dir_ = asked_dir_ + "/" + PrivateDirName();
    claimed_ = true;  // nobody else knows the name
    return exec(make_script());
  }
  throw BoardCommandError(transport_.Name() + ": cannot claim " + asked_dir_ + " after " +
                          std::to_string(kClaimAttempts) + " attempts");
}

void RemoteSession::Prepare() {
  ExecClaimed("creating " + asked_dir_, [&] {
    std::string script = "mkdir -p";
    for (const char* sub : kSubdirs) script += " " + ShellQuote(Path(sub));
    return script + " && touch " + ShellQuote(Path(kMarker));
  });
}

SyncReport RemoteSession::Sync(const std::vector<FileCopy>& files) {
  // One connection makes the directories and hashes what is there; missing files make
  // sha256sum fail, and the files it did hash are still listed.
  auto hash_script = [&] {
    std::set<std::string> dirs;
    for (const char* sub : kSubdirs) dirs.insert(Path(sub));
    for (const FileCopy& f : files) dirs.insert(fs::path(Path(f.remote)).parent_path().string());
    std::string script = "mkdir -p --";
    for (const std::string& d : dirs) script += " " + ShellQuote(d);
    script += " && touch " + ShellQuote(Path(kMarker)) + " && { sha256sum --";
    for (const FileCopy& f : files) script += " " + ShellQuote(Path(f.remote));
    return script + " 2>/dev/null; true; }";
  };
  std::map<std::string, std::string> remote =
      ParseSha256Sum(ExecClaimed("creating " + asked_dir_, hash_script));
  SyncReport report;
  std::vector<TarMember> changed;
  for (const FileCopy& f : files) {
    auto it = remote.find(Path(f.remote));
    if (it != remote.end() && it->second == Sha256File(f.local)) {
      ++report.unchanged;
      continue;
    }
    changed.push_back({f.local, f.remote, f.executable});
    ++report.copied;
    report.bytes_copied += fs::file_size(f.local);
  }
  if (changed.empty()) return report;
  // The second connection carries every changed file as one tar stream.
  ProcessIo io;
  io.stdin_path = LocalTemp("push.tar");
  WriteTar(changed, io.stdin_path);
  ThrowIfFailed(transport_, "unpacking the copied files in " + dir_,
                transport_.Exec({"tar", "-x", "-f", "-", "-C", dir_}, io));
  return report;
}

std::vector<FileCopy> RemoteSession::RuntimeFiles(const BoardRuntime& rt) {
  std::string dir = "rt-" + rt.arch + "/";
  return {{rt.ember_run, dir + "ember-run", true}, {rt.library, dir + rt.soname, false}};
}

std::vector<FileCopy> RemoteSession::ArtifactFiles(const std::string& artifact,
                                                   std::string* remote_rel) {
  fs::path p = fs::path(artifact).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") name = "artifact";
  *remote_rel = "art/" + name;
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return {{artifact, *remote_rel, false}};
  std::vector<FileCopy> files;
  for (const char* f : {"graph.json", "lib.so", "params.bin"}) {
    if (fs::exists(p / f, ec)) files.push_back({(p / f).string(), *remote_rel + "/" + f, false});
  }
  return files;
}

BoardRun RemoteSession::RunEmberRun(const BoardRuntime& rt, const std::vector<std::string>& args) {
  std::string rt_dir = Path("rt-" + rt.arch);
  std::vector<std::string> command = {"env", "LD_LIBRARY_PATH=" + rt_dir};
  command.insert(command.end(), exec_wrapper_.begin(), exec_wrapper_.end());
  command.push_back(rt_dir + "/ember-run");
  command.insert(command.end(), args.begin(), args.end());
  std::string out = ShellQuote(Path("out"));
  // One connection: run, keep what it printed and its status beside its outputs, send them all.
  std::string script = "rm -rf " + out + " && mkdir -p " + out + " && { " + ShellJoin(command) +
                       " >" + out + "/" + kStdout + " 2>" + out + "/" + kStderr + "; echo $? >" +
                       out + "/" + kStatus + "; } && cd " + out + " && tar -c -f - .";
  ProcessIo io;
  io.stdout_path = LocalTemp("out.tar");
  ThrowIfFailed(transport_, "running ember-run", transport_.Exec({"sh", "-c", script}, io));

  BoardRun run;
  run.files = ReadFlatTar(io.stdout_path, transport_.Name() + ": the run's outputs");
  if (run.files.count(kStatus) == 0) {
    throw BoardCommandError(transport_.Name() + ": the board's run left no exit status in " +
                            Path("out"));
  }
  run.exit_code = std::atoi(run.files[kStatus].c_str());
  run.out = run.files[kStdout];
  run.err = run.files[kStderr];
  for (const char* f : {kStdout, kStderr, kStatus}) run.files.erase(f);
  return run;
}

void RemoteSession::Clean() {
  if (!claimed_) return;  // the directory may be another session's
  std::string script = "rm -rf --";
  for (const char* sub : kSubdirs) script += " " + ShellQuote(Path(sub));
  script += " " + ShellQuote(Path("rt-")) + "*";  // every architecture's runtime
  script += " " + ShellQuote(Path(kMarker)) + "; ";
  if (dir_ == asked_dir_) script += UnlockIfOwnedBy(owner_) + "; ";
  script += "rmdir -- " + ShellQuote(dir_) + " 2>/dev/null; ";
  if (dir_ != asked_dir_) script += "rmdir -- " + ShellQuote(asked_dir_) + " 2>/dev/null; ";
  ThrowIfFailed(transport_, "removing " + dir_, transport_.Exec({"sh", "-c", script + "true"}));
  claimed_ = false;
}

void RemoteSession::Release() {
  if (!claimed_ || dir_ != asked_dir_) return;  // a private directory has no claim to give up
  ThrowIfFailed(transport_, "releasing " + dir_,
                transport_.Exec({"sh", "-c", UnlockIfOwnedBy(owner_)}));
  claimed_ = false;
}

}  // namespace ember::remote
