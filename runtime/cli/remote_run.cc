// ember-run --remote (see remote_run.h).
#include "remote_run.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "json_string.h"
#include "remote/board_transport.h"
#include "remote/dir_claim.h"
#include "remote/remote_session.h"

namespace ember::cli {

namespace {

namespace fs = std::filesystem;
using remote::FileCopy;

// The board's paths in its output become the paths the user gave, so --json and the "wrote"
// lines read as those of a local run.
std::string Replace(std::string text, const std::string& from, const std::string& to) {
  if (from.empty()) return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f << data;
  if (!f.flush()) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

std::string InputRel(size_t i) { return "in/" + std::to_string(i) + ".npy"; }

// Copies what changed, runs, fetches outputs and trace; returns the board's ember-run status.
int RunInSession(const RemoteRunRequest& r, remote::RemoteSession* s,
                 const remote::BoardRuntime& rt) {
  std::vector<FileCopy> files = remote::RemoteSession::RuntimeFiles(rt);
  std::string art_rel;
  for (const FileCopy& f : remote::RemoteSession::ArtifactFiles(r.artifact, &art_rel)) {
    files.push_back(f);
  }
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    files.push_back({r.inputs[i].second, InputRel(i), false});
  }
  // Sync claims the board's directory: the paths below are known only after it.
  remote::SyncReport sync = s->Sync(files);
  const std::string& board = s->transport().Name();
  if (!s->busy_holder().empty()) {
    std::cerr << "ember-run: " << board << ": " << s->asked_dir() << " is in use by "
              << remote::DescribeClaim(s->busy_holder()) << "; this run works in " << s->Path("")
              << " (removed afterwards)\n";
  }
  std::cerr << "ember-run: " << board << ": copied " << sync.copied << " file"
            << (sync.copied == 1 ? "" : "s") << " (" << sync.bytes_copied << " bytes), "
            << sync.unchanged << " unchanged\n";

  std::vector<std::string> args = {s->Path(art_rel)};
  // Board path -> the user's, most specific first (the trace lies inside out/).
  std::vector<std::pair<std::string, std::string>> local_name;
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    args.insert(args.end(), {"--input", r.inputs[i].first + "=" + s->Path(InputRel(i))});
    local_name.emplace_back(s->Path(InputRel(i)), r.inputs[i].second);
  }
  args.insert(args.end(), {"--output-dir", s->Path("out")});
  std::string remote_trace = s->Path("out/trace.json");
  if (!r.trace_file.empty()) {
    args.insert(args.end(), {"--trace", remote_trace});
    local_name.emplace_back(remote_trace, r.trace_file);
  }
  local_name.emplace_back(s->Path("out"), r.output_dir);
  local_name.emplace_back(s->Path(art_rel), r.artifact);
  args.insert(args.end(), r.flags.begin(), r.flags.end());

  remote::BoardRun run = s->RunEmberRun(rt, args);

  fs::create_directories(r.output_dir);
  for (const auto& [name, data] : run.files) {
    bool trace = name == "trace.json" && !r.trace_file.empty();
    WriteFile(trace ? r.trace_file : (fs::path(r.output_dir) / name).string(), data);
  }
  // With --json stdout is one JSON object: the user's paths go in escaped (a quote or backslash
  // in a file name must not end the string early).
  const bool json_out = std::find(r.flags.begin(), r.flags.end(), "--json") != r.flags.end();
  for (const auto& [board_path, local] : local_name) {
    const std::string quoted = runtime::JsonString(local);
    run.out = Replace(run.out, board_path, json_out ? quoted.substr(1, quoted.size() - 2) : local);
    run.err = Replace(run.err, board_path, local);
  }
  std::cout << run.out << std::flush;
  std::cerr << run.err << std::flush;
  return run.exit_code;
}

// Cleans the board's directory, or with --keep gives the claim on it up.
void Finish(remote::RemoteSession* s, bool keep) {
  if (keep) {
    s->Release();
  } else {
    s->Clean();
  }
}

void FinishQuietly(remote::RemoteSession* s, bool keep) {
  try {
    Finish(s, keep);
  } catch (const std::exception&) {
    // The error being reported matters more than this one.
  }
}

}  // namespace

int RunRemote(const RemoteRunRequest& r, const std::string& self_exe) {
  try {
    std::unique_ptr<remote::Transport> transport = remote::MakeTransport(r.board, r.ssh);
    std::string arch = remote::ElfArch(remote::ArtifactLibrary(r.artifact));
    remote::BoardRuntime rt =
        remote::FindBoardRuntime(arch, remote::RuntimeSearchDirs(r.runtime_dirs), self_exe);
    std::string dir = r.remote_dir.empty() ? remote::DefaultRemoteDir(r.board) : r.remote_dir;
    // --keep leaves a cache for the next run: it needs the directory to itself.
    remote::RemoteSession session(
        *transport, dir, remote::SplitWords(r.exec_wrapper),
        r.keep ? remote::WhenBusy::kRefuse : remote::WhenBusy::kUsePrivateDir);
    int status = 1;
    try {
      status = RunInSession(r, &session, rt);
    } catch (const remote::TransportError&) {
      throw;  // the board is gone: nothing to clean from here
    } catch (const std::exception&) {
      FinishQuietly(&session, r.keep);  // the board is there: leave nothing behind
      throw;
    }
    Finish(&session, r.keep);
    return status;
  } catch (const remote::TransportError& e) {
    std::cerr << "ember-run: --remote " << e.what() << "\n";
    return kTransportFailed;
  } catch (const remote::BoardCommandError& e) {
    std::cerr << "ember-run: --remote " << e.what() << "\n";
    return 1;
  }
}

}  // namespace ember::cli
