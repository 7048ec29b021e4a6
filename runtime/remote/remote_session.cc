// A working directory on a board (see remote_session.h).
#include "remote_session.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <sstream>

#include "sha256.h"
#include "shell_quote.h"

namespace ember::remote {

namespace {

namespace fs = std::filesystem;

constexpr const char* kMarker = ".ember-remote";
constexpr const char* kSubdirs[] = {"art", "in", "out", "work"};
constexpr size_t kSha256HexDigits = 64;

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

std::string ThrowIfFailed(const Transport& t, const std::vector<std::string>& argv,
                          const ProcessResult& r) {
  if (r.exit_code == 0) return r.out;
  throw TransportError(t.Name() + ": `" + ShellJoin(argv) + "` failed on the board (exit " +
                       std::to_string(r.exit_code) + "): " + r.err);
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
                             std::vector<std::string> exec_wrapper)
    : transport_(transport), dir_(std::move(dir)), exec_wrapper_(std::move(exec_wrapper)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
}

void RemoteSession::Prepare() {
  std::string script = "mkdir -p";
  for (const char* sub : kSubdirs) script += " " + ShellQuote(Path(sub));
  script += " && touch " + ShellQuote(Path(kMarker));
  std::vector<std::string> argv = {"sh", "-c", script};
  ThrowIfFailed(transport_, argv, transport_.Exec(argv));
}

SyncReport RemoteSession::Sync(const std::vector<FileCopy>& files) {
  std::vector<std::string> argv = {"sha256sum", "--"};
  for (const FileCopy& f : files) argv.push_back(Path(f.remote));
  // Missing files make sha256sum fail; the files it did hash are still listed.
  std::map<std::string, std::string> remote = ParseSha256Sum(transport_.Exec(argv).out);
  SyncReport report;
  std::vector<std::string> made;
  for (const FileCopy& f : files) {
    auto it = remote.find(Path(f.remote));
    if (it != remote.end() && it->second == Sha256File(f.local)) {
      ++report.unchanged;
      continue;
    }
    std::string parent = fs::path(Path(f.remote)).parent_path().string();
    if (std::find(made.begin(), made.end(), parent) == made.end()) {
      std::vector<std::string> mk = {"mkdir", "-p", "--", parent};
      ThrowIfFailed(transport_, mk, transport_.Exec(mk));
      made.push_back(parent);
    }
    transport_.Push(f.local, Path(f.remote), f.executable);
    ++report.copied;
    report.bytes_copied += fs::file_size(f.local);
  }
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

ProcessResult RemoteSession::RunEmberRun(const BoardRuntime& rt,
                                         const std::vector<std::string>& args) {
  std::string rt_dir = Path("rt-" + rt.arch);
  std::vector<std::string> command = {"env", "LD_LIBRARY_PATH=" + rt_dir};
  command.insert(command.end(), exec_wrapper_.begin(), exec_wrapper_.end());
  command.push_back(rt_dir + "/ember-run");
  command.insert(command.end(), args.begin(), args.end());
  std::string out = ShellQuote(Path("out"));
  std::string script = "rm -rf " + out + " && mkdir -p " + out + " && exec " + ShellJoin(command);
  return transport_.Exec({"sh", "-c", script});
}

std::vector<std::string> RemoteSession::List(const std::string& rel) const {
  std::vector<std::string> argv = {"ls", "-1", "--", Path(rel)};
  std::string out = ThrowIfFailed(transport_, argv, transport_.Exec(argv));
  std::vector<std::string> names;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) names.push_back(line);
  }
  std::sort(names.begin(), names.end());
  return names;
}

void RemoteSession::Clean() {
  std::string script = "rm -rf --";
  for (const char* sub : kSubdirs) script += " " + ShellQuote(Path(sub));
  script += " " + ShellQuote(Path("rt-")) + "*";  // every architecture's runtime
  script +=
      " " + ShellQuote(Path(kMarker)) + "; rmdir -- " + ShellQuote(dir_) + " 2>/dev/null; true";
  std::vector<std::string> argv = {"sh", "-c", script};
  ThrowIfFailed(transport_, argv, transport_.Exec(argv));
}

}  // namespace ember::remote
