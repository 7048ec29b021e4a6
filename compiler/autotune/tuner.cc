// Measuring candidate schedule parameters (see tuner.h).
#include "tuner.h"

#include <ember/compiler/codegen.h>
#include <ember/compiler/ir/graph.h>
#include <ember/compiler/lower.h>
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/module.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/packed_func.h>
#include <ember/runtime/threading.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <iomanip>
#include <map>
#include <random>
#include <sstream>

#include "../schedule/tuning.h"
#include "one_kernel_artifact.h"
#include "remote_timer.h"

namespace ember::compiler::autotune {
namespace {

namespace fs = std::filesystem;
using runtime::NDArray;
using schedule::TuningTask;

bool IsF32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

// Inputs with a fixed seed, so every candidate sees the same data; non-float inputs stay zero
// (index-like tensors then address element 0).
std::vector<NDArray> MakeArrays(const FusedGroup& g, bool outputs) {
  std::vector<NDArray> out;
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int vid : outputs ? g.outputs : g.inputs) {
    const TensorType& t = g.graph->value(vid).type;
    NDArray a = NDArray::Empty(runtime::ShapeTuple(t.shape), t.dtype, DLDevice{kDLCPU, 0});
    const int64_t bytes = t.ByteSize();
    std::vector<uint8_t> host(static_cast<size_t>(bytes), 0);
    if (!outputs && IsF32(t.dtype)) {
      float* f = reinterpret_cast<float*>(host.data());
      for (int64_t i = 0; i < t.NumElements(); ++i) f[i] = dist(rng);
    }
    a.CopyFromBytes(host.data(), host.size());
    out.push_back(a);
  }
  return out;
}

std::vector<float> OutputFloats(const std::vector<NDArray>& outs) {
  std::vector<float> v;
  for (const NDArray& a : outs) {
    if (!IsF32(a->dtype)) continue;
    int64_t n = 1;
    for (int i = 0; i < a->ndim; ++i) n *= a->shape[i];
    size_t at = v.size();
    v.resize(at + static_cast<size_t>(n));
    a.CopyToBytes(v.data() + at, static_cast<size_t>(n) * sizeof(float));
  }
  return v;
}

// Outputs agree when they differ by reassociation noise only.
bool SameOutputs(const std::vector<float>& ref, const std::vector<float>& got, double* max_diff) {
  if (ref.size() != got.size()) return false;
  double scale = 1, diff = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(ref[i])));
    double d = std::fabs(static_cast<double>(ref[i]) - got[i]);
    if (!(d <= diff)) diff = d;  // NaN counts as a difference
  }
  *max_diff = diff;
  constexpr double kRelTol = 1e-4;
  return diff <= kRelTol * scale;
}

class TempDir {
 public:
  TempDir() {
    std::string base = (fs::temp_directory_path() / "ember_tune_XXXXXX").string();
    std::vector<char> tmpl(base.begin(), base.end());
    tmpl.push_back('\0');
    if (mkdtemp(tmpl.data()) == nullptr) {
      throw CompileError("--tune: cannot create a temporary directory under " +
                         fs::temp_directory_path().string());
    }
    path_ = tmpl.data();
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs the tuner on one thread and restores the runtime's default afterwards.
class OneThread {
 public:
  OneThread() { runtime::threading::SetNumThreads(1); }
  ~OneThread() { runtime::threading::SetNumThreads(0); }
};

}  // namespace

TuneReport TuneGroups(const std::vector<FusedGroup>& groups, const Target& target,
                      const TuneOptions& options, TuningLog* log) {
  using Clock = std::chrono::steady_clock;
  auto t_start = Clock::now();
  if (!target.is_host && options.remote == nullptr) {
    throw CompileError(
        "--tune measures kernels on this machine, so it needs the host target; got "
        "--target \"" +
        target.str() +
        "\" (tune on the board with --remote USER@HOST, or compile for it with --tuning-log "
        "FILE from a tuning run there)");
  }
  if (options.repeat < 1 || options.min_repeat_ms < 0 || options.max_candidates < 0) {
    throw CompileError("--tune: repeat must be >= 1 and candidates >= 0");
  }
  TuneReport report;
  // The workload each group describes (the last tunable schedule LowerGroup reached is the one that
  // took the group); groups with equal keys are measured once.
  std::map<std::string, std::pair<TuningTask, const FusedGroup*>> tasks;
  std::vector<std::string> order;
  for (const FusedGroup& g : groups) {
    std::vector<TuningTask> described;
    lower::ScheduleOptions so;
    so.target = &target;
    so.scheduler = options.scheduler;
    so.tuning_tasks = &described;
    try {
      lower::LowerGroup(g, so);
    } catch (const std::exception&) {
      continue;  // the real build reports it
    }
    if (described.empty()) continue;
    std::string key = described.back().key;
    if (tasks.count(key) == 0) {
      order.push_back(key);
      tasks.emplace(key, std::make_pair(std::move(described.back()), &g));
    }
  }
  report.workloads = static_cast<int>(order.size());

  TempDir dir;
  OneThread one_thread;
  int index = 0;
  for (const std::string& key : order) {
    ++index;
    const TuningTask& task = tasks.at(key).first;
    const FusedGroup& group = *tasks.at(key).second;
    const TuningRecord* have = log->Find(key);
    if (have != nullptr && have->version == options.version && !options.retune) {
      ++report.reused;
      continue;
    }
    std::vector<ParamSet> cands = task.candidates;
    if (options.max_candidates > 0 && cands.size() > static_cast<size_t>(options.max_candidates)) {
      cands.resize(static_cast<size_t>(options.max_candidates));
    }
    std::vector<NDArray> ins = MakeArrays(group, false);
    std::vector<NDArray> outs = MakeArrays(group, true);
    std::vector<TVMValue> values;
    std::vector<int> codes;
    for (const auto* list : {&ins, &outs}) {
      for (const NDArray& a : *list) {
        TVMValue v;
        v.v_handle = NDArray::FFIGetHandle(a);
        values.push_back(v);
        codes.push_back(kTVMDLTensorHandle);
      }
    }
    runtime::TVMArgs args(values.data(), codes.data(), static_cast<int>(values.size()));
    // Build, load and check every candidate first, then time them round-robin, so that a change
    // of machine load in between touches every candidate alike.
    struct Loaded {
      ParamSet params;
      runtime::Module module;
      runtime::PackedFunc func;
      double ms = -1;
    };
    std::vector<Loaded> loaded;
    std::vector<float> reference;
    for (size_t c = 0; c < cands.size(); ++c) {
      TuningLog one;
      one.Put(TuningRecord{key, cands[c], 0, options.version});
      BuildOptions bo;
      bo.tuning_log = &one;
      bo.scheduler = options.scheduler;
      bo.linker = options.linker;
      // A directory per candidate: on a board it is the one-kernel artifact ember-run times.
      std::string art = dir.path() + "/w" + std::to_string(index) + "_c" + std::to_string(c);
      fs::create_directories(art);
      std::string lib = art + "/lib.so";
      BuildKernelLibrary({group}, target, lib, bo);
      if (one.used().count(key) == 0) continue;  // the schedule did not take these params
      Loaded l{cands[c], {}, nullptr};
      std::vector<float> got;
      if (options.remote != nullptr) {
        WriteOneKernelArtifact(group, art);
        RemoteKernelTimer::Timing t = options.remote->Time(art, options.repeat);
        l.ms = t.median_ms;
        got = std::move(t.outputs);
      } else {
        l.module = runtime::Module::LoadFromFile(lib);
        l.func = l.module.GetFunction(group.func_name);
        if (l.func == nullptr) throw CompileError("--tune: " + lib + " lacks " + group.func_name);
        runtime::TVMRetValue rv;
        l.func.CallPacked(args, &rv);
        got = OutputFloats(outs);
      }
      double diff = 0;
      if (loaded.empty()) {
        reference = got;
      } else if (!SameOutputs(reference, got, &diff)) {
        ++report.rejected;
        if (options.log) {
          *options.log << "emberc: tune: dropping " << ParamSetToString(cands[c]) << " for " << key
                       << ": outputs differ from the default's by " << diff << "\n";
        }
        continue;
      }
      loaded.push_back(std::move(l));
    }
    for (int r = 0; r < options.repeat; ++r) {
      for (Loaded& l : loaded) {
        if (l.func == nullptr) continue;  // timed on the board already
        double ms = runtime::TimeEvaluate(l.func, args, 1, 1, options.min_repeat_ms)[0] * 1e3;
        if (l.ms < 0 || ms < l.ms) l.ms = ms;
      }
    }
    report.candidates += static_cast<int>(loaded.size());
    // The default (first) keeps its place unless another is clearly faster: noise must not
    // pick a different block.
    constexpr double kMinGain = 0.03;
    double best_ms = -1, default_ms = loaded.empty() ? -1 : loaded[0].ms;
    ParamSet best;
    std::ostringstream timings;  // "params ms" per candidate, for the progress line
    for (const Loaded& l : loaded) {
      timings << (&l == &loaded[0] ? "" : "; ") << ParamSetToString(l.params) << " " << std::fixed
              << std::setprecision(3) << l.ms;
      if (best_ms < 0 || l.ms < best_ms) {
        best_ms = l.ms;
        best = l.params;
      }
    }
    if (best_ms > default_ms * (1 - kMinGain)) {
      best_ms = default_ms;
      best = loaded[0].params;
    }
    if (best_ms < 0) continue;
    log->Put(TuningRecord{key, best, best_ms, options.version});
    ++report.measured;
    if (options.log) {
      *options.log << "emberc: tune [" << index << "/" << order.size() << "] " << key << ": "
                   << ParamSetToString(best) << " " << std::fixed << std::setprecision(3) << best_ms
                   << " ms (default " << default_ms << " ms; " << timings.str() << ")\n";
    }
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - t_start).count();
  return report;
}

}  // namespace ember::compiler::autotune
