// Timing candidates on a board (see remote_timer.h).
#include "remote_timer.h"

#include <ember/compiler/ir/tensor_type.h>
#include <ember/runtime/npy.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "runtime/remote/board_cpu.h"
#include "runtime/remote/board_transport.h"

namespace ember::compiler::autotune {

namespace {

namespace fs = std::filesystem;

// Warm-up runs before the timed samples: the first runs fault in the kernel's pages.
constexpr int kWarmup = 3;
// Timed runs per repeat the user asked for (--tune-repeat); the median of all counts.
constexpr int kSamplesPerRepeat = 5;
// A sample shorter than this is timed again as the mean of several runs (ember-run --number).
constexpr double kMinSampleMs = 0.2;
constexpr int kMaxNumber = 1000;

remote::SshOptions SshOptionsOf(const RemoteBoardOptions& o) {
  remote::SshOptions ssh = remote::SshOptionsFromEnvironment();
  if (!o.ssh_config.empty()) ssh.config_file = o.ssh_config;
  ssh.options = o.ssh_options;
  return ssh;
}

// "median_ms": N from ember-run's --bench --json line.
double MedianMs(const std::string& json, const std::string& board) {
  const std::string field = "\"median_ms\": ";
  size_t at = json.find(field);
  if (at == std::string::npos) {
    throw CompileError("--tune --remote " + board + ": ember-run printed no median_ms: " + json);
  }
  return std::stod(json.substr(at + field.size()));
}

std::vector<float> ReadFloats(const std::string& npy) {
  std::vector<float> v;
  DLDataType dtype{};
  std::vector<char> bytes;
  runtime::LoadNpyInto(npy, [&](const runtime::NpyHeader& h) -> void* {
    int64_t n = 1;
    for (int64_t d : h.shape) n *= d;
    dtype = h.dtype;
    bytes.resize(static_cast<size_t>(n) * ((h.dtype.bits + 7) / 8));
    return bytes.data();
  });
  if (dtype.code == kDLFloat && dtype.bits == 32) {
    v.resize(bytes.size() / sizeof(float));
    std::memcpy(v.data(), bytes.data(), bytes.size());
  }
  return v;
}

std::string SelfExe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.string();
}

}  // namespace

RemoteKernelTimer::RemoteKernelTimer(const RemoteBoardOptions& options) : options_(options) {
  try {
    transport_ = remote::MakeTransport(options.board, SshOptionsOf(options));
    std::string dir =
        options.remote_dir.empty() ? remote::DefaultRemoteDir(options.board) : options.remote_dir;
    session_ = std::make_unique<remote::RemoteSession>(
        *transport_, dir, remote::SplitWords(options.exec_wrapper),
        remote::WhenBusy::kUsePrivateDir);  // it keeps nothing
    session_->Prepare();
  } catch (const std::exception& e) {
    throw CompileError(std::string("--remote ") + e.what());
  }
}

RemoteKernelTimer::~RemoteKernelTimer() {
  try {
    if (session_) session_->Clean();
  } catch (const std::exception&) {
    // The board dropped: nothing left to clean from here.
  }
}

std::string RemoteKernelTimer::BoardCpu() const {
  remote::ProcessResult r = transport_->Exec({"cat", "/proc/cpuinfo"});
  std::string name = remote::BoardCpuName(r.out);
  if (r.exit_code != 0 || name.empty()) {
    throw CompileError("--remote " + options_.board +
                       ": cannot name the board's CPU from /proc/cpuinfo (exit " +
                       std::to_string(r.exit_code) + "): " + r.err);
  }
  return name;
}

remote::BoardRun RemoteKernelTimer::Bench(const std::string& art_rel, int repeat, int number) {
  remote::BoardRun r = session_->RunEmberRun(
      *runtime_, {session_->Path(art_rel), "--bench", "--json", "--threads", "1", "--warmup",
                  std::to_string(kWarmup), "--repeat", std::to_string(repeat * kSamplesPerRepeat),
                  "--number", std::to_string(number), "--output-dir", session_->Path("out")});
  if (r.exit_code != 0) {
    throw CompileError("--tune --remote " + options_.board +
                       ": ember-run failed on the board (exit " + std::to_string(r.exit_code) +
                       "): " + r.err);
  }
  return r;
}

RemoteKernelTimer::Timing RemoteKernelTimer::Time(const std::string& dir, int repeat) {
  try {
    if (!runtime_) {
      std::string arch = remote::ElfArch(dir + "/lib.so");
      // emberc's own build tree or prefix holds the ember-run of the host's architecture.
      runtime_ = remote::FindBoardRuntime(arch, remote::RuntimeSearchDirs(options_.runtime_dirs),
                                          SelfExe());
    }
    std::vector<remote::FileCopy> files = remote::RemoteSession::RuntimeFiles(*runtime_);
    std::string art_rel;
    for (const auto& f : remote::RemoteSession::ArtifactFiles(dir, &art_rel)) files.push_back(f);
    session_->Sync(files);
    remote::BoardRun r = Bench(art_rel, repeat, 1);
    Timing t;
    t.median_ms = MedianMs(r.out, options_.board);
    if (t.median_ms < kMinSampleMs) {
      // A few microseconds per run: samples of one run are mostly timer and scheduler noise.
      int number = static_cast<int>(std::ceil(kMinSampleMs / std::max(t.median_ms, 1e-4)));
      t.median_ms =
          MedianMs(Bench(art_rel, repeat, std::min(number, kMaxNumber)).out, options_.board);
    }
    for (const auto& [name, data] : r.files) {  // output_0.npy, ... in name order
      std::string local = (fs::path(dir) / name).string();
      std::ofstream(local, std::ios::binary) << data;
      std::vector<float> v = ReadFloats(local);
      t.outputs.insert(t.outputs.end(), v.begin(), v.end());
    }
    return t;
  } catch (const CompileError&) {
    throw;
  } catch (const std::exception& e) {
    throw CompileError(std::string("--tune --remote ") + e.what());
  }
}

}  // namespace ember::compiler::autotune
