// ember-run: runs a compiled artifact on .npy inputs, writes .npy outputs, benchmarks and profiles.
// The command line is a contract (DESIGN.md); tests and benchmarks depend on it.
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/half_float.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/npy.h>
#include <ember/runtime/threading.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "remote/board_transport.h"
#include "remote_run.h"

namespace {

using namespace ember::runtime;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    R"(usage: ember-run ARTIFACT [options]

Runs a compiled model. ARTIFACT is a directory holding graph.json, lib.so and params.bin
(as `emberc compile` writes it), or one shared library with the graph and params embedded
(TVM's export_library form).

options:
  --input NAME=FILE.npy   set input NAME from a .npy file (repeatable). All numeric dtypes,
                          C order, little-endian. Inputs not given are filled with seeded
                          random data (floats in [-1, 1), integers in [0, 10), bools 0/1).
  --output-dir DIR        write the outputs as DIR/output_0.npy, output_1.npy, ... in graph
                          output order (default: the current directory; created if missing)
  --seed S                seed of the random inputs (default 0)
  --threads N             worker threads for parallel kernels (default: EMBER_NUM_THREADS, else
                          one per core)
  --bench                 time the model: --warmup runs, then --repeat samples, each the mean
                          of --number runs; prints mean/median/p90/p99/min/max/std in ms
    --warmup W            untimed runs first (default 10)
    --repeat R            samples (default 50)
    --number K            runs per sample (default 1)
  --profile               time every operator on its own and print a table sorted by time
                          (node, kernel, output shape and dtype, time, share of the total)
  --trace FILE            write one run as a Chrome trace-event file, one event per operator
                          (node, kernel, shapes, thread, start and duration in us), for
                          Perfetto (ui.perfetto.dev) or chrome://tracing
  --json                  print one JSON object instead of text. With --bench its keys are
                          median_ms, mean_ms, p90_ms, p99_ms, min_ms, max_ms, std_ms, repeat,
                          number, warmup, threads, workers_late (times a worker was descheduled
                          mid-task and sat out launches), load_ms, first_run_ms, outputs (and
                          profile with --profile)

on a board (ssh or adb; see README, "Benchmark on boards"):
  --remote USER@HOST[:PORT]   run there instead: copies the artifact, the inputs and an
                          ember-run built for the artifact's architecture (only files whose
                          SHA-256 changed), runs it with the same options and brings the
                          outputs, trace and printed results back. adb:SERIAL is an Android
                          device (adb -s SERIAL). Uses your ssh config, agent and known_hosts.
    --remote-dir DIR      the board's working directory (default /tmp/ember-remote-$USER;
                          /data/local/tmp/ember-remote on Android); a run that finds another
                          one using it works in a fresh DIR/run-* instead
    --keep                leave the board's directory in place (the next run copies only
                          what changed); by default it is removed after the run. Needs the
                          directory to itself: fails if another run is using it
    --runtime-dir DIR     where board runtimes were built (DIR/cross-ARCH, DIR/ARCH or DIR,
                          each with bin/ember-run and lib/); repeatable; EMBER_RUNTIME_DIRS
                          (colon-separated) adds more. This ember-run serves its own arch.
    --remote-exec-wrapper "CMD ARGS"   words put before the board's ember-run, e.g.
                          "qemu-aarch64 -L /usr/aarch64-linux-gnu" for a board emulated by
                          qemu-user
    --ssh-config FILE     ssh -F FILE (default: EMBER_SSH_CONFIG, else ssh's own)
    --ssh-option OPT      ssh -o OPT (repeatable), e.g. UserKnownHostsFile=FILE
  -h, --help              this text
  --version               print the version

Every error is one line on stderr and a non-zero exit: 2 for a bad command line, 3 when
--remote could not reach the board (or it dropped), 1 otherwise.
A progress line is shown on stderr during benchmarks longer than 2 s when stdout is a terminal.
)";

struct Options {
  std::string artifact;
  std::vector<std::pair<std::string, std::string>> inputs;  // name, file
  std::string output_dir = ".";
  int threads = 0;
  uint64_t seed = 0;
  bool bench = false;
  int warmup = 10;
  int repeat = 50;
  int number = 1;
  bool profile = false;
  std::string trace_file;
  bool json = false;
  bool have_seed = false;
  ember::cli::RemoteRunRequest remote;
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int64_t ParseInt(const std::string& flag, const std::string& text, int64_t lo, int64_t hi) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || v < lo || v > hi) {
    throw UsageError(flag + " expects an integer in " + std::to_string(lo) + ".." +
                     std::to_string(hi) + ", got \"" + text + "\"");
  }
  return v;
}

// The --remote family; true when `a` was one of them.
template <typename Value>
bool ParseRemoteFlag(const std::string& a, Value&& value, ember::cli::RemoteRunRequest* r) {
  if (a == "--remote") {
    r->board = value("--remote");
  } else if (a == "--remote-dir") {
    r->remote_dir = value("--remote-dir");
  } else if (a == "--keep") {
    r->keep = true;
  } else if (a == "--runtime-dir") {
    r->runtime_dirs.push_back(value("--runtime-dir"));
  } else if (a == "--remote-exec-wrapper") {
    r->exec_wrapper = value("--remote-exec-wrapper");
  } else if (a == "--ssh-config") {
    r->ssh.config_file = value("--ssh-config");
  } else if (a == "--ssh-option") {
    r->ssh.options.push_back(value("--ssh-option"));
  } else {
    return false;
  }
  return true;
}

bool RemoteOnlyFlagGiven(const ember::cli::RemoteRunRequest& r) {
  return !r.remote_dir.empty() || r.keep || !r.runtime_dirs.empty() || !r.exec_wrapper.empty() ||
         !r.ssh.config_file.empty() || !r.ssh.options.empty();
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  bool have_warmup = false, have_repeat = false, have_number = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* flag) -> std::string {
      if (i + 1 >= argc) throw UsageError(std::string(flag) + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--version") {
      std::cout << "ember-run " << EMBER_VERSION << " (TVM ABI " << TVM_VERSION << ")\n";
      std::exit(0);
    } else if (a == "--input") {
      std::string v = value("--input");
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
        throw UsageError("--input expects NAME=FILE.npy, got \"" + v + "\"");
      }
      o.inputs.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--output-dir") {
      o.output_dir = value("--output-dir");
    } else if (a == "--threads") {
      o.threads =
          static_cast<int>(ParseInt("--threads", value("--threads"), 1, threading::kMaxThreads));
    } else if (a == "--seed") {
      o.seed = static_cast<uint64_t>(ParseInt("--seed", value("--seed"), 0, INT64_MAX));
      o.have_seed = true;
    } else if (a == "--bench") {
      o.bench = true;
    } else if (a == "--warmup") {
      o.warmup = static_cast<int>(ParseInt("--warmup", value("--warmup"), 0, 1000000));
      have_warmup = true;
    } else if (a == "--repeat") {
      o.repeat = static_cast<int>(ParseInt("--repeat", value("--repeat"), 1, 1000000));
      have_repeat = true;
    } else if (a == "--number") {
      o.number = static_cast<int>(ParseInt("--number", value("--number"), 1, 1000000));
      have_number = true;
    } else if (a == "--profile") {
      o.profile = true;
    } else if (a == "--trace") {
      o.trace_file = value("--trace");
    } else if (a == "--json") {
      o.json = true;
    } else if (ParseRemoteFlag(a, value, &o.remote)) {
      // --remote and its options (remote_run.h), taken into o.remote
    } else if (!a.empty() && a[0] == '-') {
      throw UsageError("unknown option " + a + " (see ember-run --help)");
    } else if (o.artifact.empty()) {
      o.artifact = a;
    } else {
      throw UsageError("more than one artifact given (\"" + o.artifact + "\" and \"" + a + "\")");
    }
  }
  if (o.artifact.empty()) throw UsageError("no artifact given (see ember-run --help)");
  if (!o.bench && (have_warmup || have_repeat || have_number)) {
    throw UsageError("--warmup, --repeat and --number only apply with --bench");
  }
  if (o.remote.board.empty() && RemoteOnlyFlagGiven(o.remote)) {
    throw UsageError(
        "--remote-dir, --keep, --runtime-dir, --remote-exec-wrapper, --ssh-config and "
        "--ssh-option only apply with --remote USER@HOST[:PORT]");
  }
  return o;
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out;
}

std::string Ms(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  return buf;
}

double ElapsedMs(Clock::time_point since) {
  return std::chrono::duration<double, std::milli>(Clock::now() - since).count();
}

// Fills \p arr with seeded random values suited to its dtype.
void FillRandom(NDArray arr, std::mt19937_64* rng) {
  const DLTensor* t = arr.operator->();
  int64_t n = arr.NumElements();
  DLDataType d = t->dtype;
  char* p = static_cast<char*>(t->data);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> small(0, 9);
  for (int64_t i = 0; i < n; ++i) {
    if (d.code == kDLFloat && d.bits == 32) {
      reinterpret_cast<float*>(p)[i] = static_cast<float>(real(*rng));
    } else if (d.code == kDLFloat && d.bits == 64) {
      reinterpret_cast<double*>(p)[i] = real(*rng);
    } else if (d.code == kDLFloat && d.bits == 16) {
      const uint16_t h = FloatToHalf(static_cast<float>(real(*rng)));
      reinterpret_cast<uint16_t*>(p)[i] = h == 0x3c00 ? 0x3bff : h;  // 1.0 rounded down: [-1, 1)

    } else if ((d.code == kDLInt || d.code == kDLUInt) && d.bits >= 8) {
      int64_t v = small(*rng);
      std::memcpy(p + i * (d.bits / 8), &v, d.bits / 8);  // little-endian low bytes
    } else if (d.code == kDLUInt && d.bits == 1) {
      p[i] = static_cast<char>(small(*rng) % 2);
    } else {
      // Anything else (bfloat16, which emberc does not take, sub-byte integers): zero bytes are
      // a valid value.
      std::memset(p, 0, arr.NBytes());
      return;
    }
  }
}

struct Stats {
  double mean, median, p90, p99, min, max, std;
};

Stats Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto pct = [&](double q) {
    double pos = q * static_cast<double>(v.size() - 1);
    size_t lo = static_cast<size_t>(pos);
    size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  Stats s{};
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(var / static_cast<double>(v.size()));
  s.median = pct(0.5);
  s.p90 = pct(0.9);
  s.p99 = pct(0.99);
  s.min = v.front();
  s.max = v.back();
  return s;
}

// Made before loading and running, so a bad --output-dir costs nothing and names itself.
void PrepareOutputDir(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw Error("--output-dir " + dir + ": exists and is not a directory; give a directory " +
                "(it is created when missing)");
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("--output-dir " + dir + ": cannot create the directory: " + ec.message());
}

int Run(const Options& o) {
  auto start = Clock::now();
  PrepareOutputDir(o.output_dir);
  if (o.threads > 0) threading::SetNumThreads(o.threads);

  Module factory = LoadArtifact(o.artifact);
  Module gmod = factory.GetFunction(kDefaultModuleName)(kCPU);
  double load_ms = ElapsedMs(start);

  // Inputs: from files, the rest seeded random.
  Map<String, ObjectRef> info = gmod.GetFunction("get_input_info")();
  Map<String, ShapeTuple> shapes(ObjectRefInternal::Data(info.at(String("shape"))));
  Map<String, String> dtypes(ObjectRefInternal::Data(info.at(String("dtype"))));
  std::map<std::string, bool> given;
  PackedFunc set_input = gmod.GetFunction("set_input");
  Map<String, String> bound = gmod.GetFunction("get_bound_inputs")();
  for (const auto& [name, file] : o.inputs) {
    if (bound.count(String(name))) {
      throw Error("--input " + name + "=" + file + ": input \"" + name + "\" was bound to " +
                  bound.at(String(name)).str() +
                  " at compile time (emberc --bind); this artifact has no such input");
    }
    if (!shapes.count(String(name))) {
      std::string valid;
      for (const auto& kv : shapes) valid += (valid.empty() ? "" : ", ") + kv.first.str();
      throw Error("--input " + name + "=" + file + ": the model has no input named \"" + name +
                  "\"; inputs are: " + (valid.empty() ? "(none)" : valid));
    }
    if (given.count(name)) throw Error("--input " + name + " is given twice");
    NDArray arr;
    LoadNpyInto(file, [&](const NpyHeader& h) -> void* {
      arr = NDArray::Empty(ShapeTuple(h.shape), h.dtype, kCPU);
      return arr->data;
    });
    try {
      set_input(name, arr);
    } catch (const Error& e) {
      throw Error("--input " + name + "=" + file + ": " + e.what());
    }
    given[name] = true;
  }
  std::mt19937_64 rng(o.seed);
  for (const auto& [name, shape] : shapes) {
    if (given.count(name.str())) continue;
    DLDataType dtype = StringToDLDataType(dtypes.at(name).str());
    NDArray arr = NDArray::Empty(shape, dtype, kCPU);
    FillRandom(arr, &rng);
    set_input(name, arr);
    if (!o.json) {
      std::cerr << "ember-run: input \"" << name.str() << "\" not given; using seeded random "
                << DLDataTypeToString(dtype) << " data (seed " << o.seed << ")\n";
    }
  }

  PackedFunc run = gmod.GetFunction("run");
  auto t0 = Clock::now();
  run();
  double first_run_ms = ElapsedMs(t0);
  double cold_start_ms = ElapsedMs(start);

  Stats stats{};
  if (o.bench) {
    for (int i = 0; i < o.warmup; ++i) run();
    std::vector<double> samples;
    samples.reserve(static_cast<size_t>(o.repeat));
    bool tty = isatty(STDOUT_FILENO) != 0;
    auto bench_start = Clock::now();
    for (int r = 0; r < o.repeat; ++r) {
      auto s0 = Clock::now();
      for (int k = 0; k < o.number; ++k) run();
      samples.push_back(ElapsedMs(s0) / o.number);
      if (tty && ElapsedMs(bench_start) > 2000.0) {
        std::fprintf(stderr, "\r  sample %d/%d  last %.3f ms", r + 1, o.repeat, samples.back());
        std::fflush(stderr);
      }
    }
    if (tty && ElapsedMs(bench_start) > 2000.0) std::fprintf(stderr, "\r%60s\r", "");
    stats = Summarize(samples);
  }

  std::string profile_text;
  if (o.profile) {
    int number = o.bench ? o.number : 1;
    int repeat = o.bench ? std::max(o.repeat / 5, 3) : 3;
    ProfileReport report = ProfileExecutor(gmod, number, repeat, 1);
    profile_text = o.json ? report.Json() : report.Table();
  }

  if (!o.trace_file.empty()) {
    std::ofstream trace(o.trace_file, std::ios::binary);
    trace << TraceExecutorRuns(gmod, 1);
    if (!trace.flush()) {
      throw std::runtime_error("cannot write the trace to " + o.trace_file + ": " +
                               std::strerror(errno));
    }
  }

  // Outputs, in graph output order.
  int num_outputs = gmod.GetFunction("get_num_outputs")();
  PackedFunc get_output = gmod.GetFunction("get_output");
  std::vector<std::string> written;
  for (int i = 0; i < num_outputs; ++i) {
    NDArray out = get_output(i);
    std::string path = o.output_dir + "/output_" + std::to_string(i) + ".npy";
    ShapeTuple shape = out.Shape();
    SaveNpy(path, out.DataType(), std::vector<int64_t>(shape.begin(), shape.end()), out->data,
            out.NBytes());
    written.push_back(path);
  }

  int threads = threading::NumThreads();
  // Times a worker was descheduled mid-task and sat out launches (threading.h, Late workers).
  const uint64_t workers_late = threading::TimesWorkersWereLate();
  if (o.json) {
    std::ostringstream js;
    js << "{";
    if (o.bench) {
      js << "\"median_ms\": " << Ms(stats.median) << ", \"mean_ms\": " << Ms(stats.mean)
         << ", \"p90_ms\": " << Ms(stats.p90) << ", \"p99_ms\": " << Ms(stats.p99)
         << ", \"min_ms\": " << Ms(stats.min) << ", \"max_ms\": " << Ms(stats.max)
         << ", \"std_ms\": " << Ms(stats.std) << ", \"repeat\": " << o.repeat
         << ", \"number\": " << o.number << ", \"warmup\": " << o.warmup << ", ";
    }
    js << "\"threads\": " << threads << ", \"workers_late\": " << workers_late
       << ", \"load_ms\": " << Ms(load_ms) << ", \"first_run_ms\": " << Ms(first_run_ms)
       << ", \"cold_start_ms\": " << Ms(cold_start_ms) << ", \"artifact\": \""
       << JsonEscape(o.artifact) << "\", \"outputs\": [";
    for (size_t i = 0; i < written.size(); ++i) {
      js << (i ? ", " : "") << "\"" << JsonEscape(written[i]) << "\"";
    }
    js << "]";
    if (o.profile) js << ", \"profile\": " << profile_text;
    if (!o.trace_file.empty()) js << ", \"trace\": \"" << JsonEscape(o.trace_file) << "\"";
    js << "}\n";
    std::cout << js.str();
  } else {
    std::printf("%s: loaded in %.3f ms, first run %.3f ms, %d thread%s\n", o.artifact.c_str(),
                load_ms, first_run_ms, threads, threads == 1 ? "" : "s");
    if (o.bench) {
      std::printf(
          "bench: %d samples x %d runs after %d warm-up runs (ms per run)\n"
          "  mean %.4f  median %.4f  p90 %.4f  p99 %.4f  min %.4f  max %.4f  std %.4f\n",
          o.repeat, o.number, o.warmup, stats.mean, stats.median, stats.p90, stats.p99, stats.min,
          stats.max, stats.std);
      if (workers_late != 0) {
        std::printf(
            "  a worker ended late (descheduled: another process on its core) %llu "
            "time%s and sat out launches\n",
            static_cast<unsigned long long>(workers_late), workers_late == 1 ? "" : "s");
      }
    }
    if (o.profile) std::printf("%s", profile_text.c_str());
    for (const auto& p : written) std::printf("wrote %s\n", p.c_str());
    if (!o.trace_file.empty()) std::printf("wrote trace %s\n", o.trace_file.c_str());
  }
  return 0;
}

std::string SelfExe() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "" : p.string();
}

// The same run on a board: files are named for the copy, every other option is passed on.
int RunOnBoard(Options* o) {
  ember::cli::RemoteRunRequest& r = o->remote;
  if (r.ssh.config_file.empty())
    r.ssh.config_file = ember::remote::SshOptionsFromEnvironment().config_file;
  r.artifact = o->artifact;
  r.inputs = o->inputs;
  r.output_dir = o->output_dir;
  r.trace_file = o->trace_file;
  if (o->threads > 0) r.flags.insert(r.flags.end(), {"--threads", std::to_string(o->threads)});
  if (o->have_seed) r.flags.insert(r.flags.end(), {"--seed", std::to_string(o->seed)});
  if (o->bench) {
    r.flags.insert(r.flags.end(),
                   {"--bench", "--warmup", std::to_string(o->warmup), "--repeat",
                    std::to_string(o->repeat), "--number", std::to_string(o->number)});
  }
  if (o->profile) r.flags.push_back("--profile");
  if (o->json) r.flags.push_back("--json");
  return ember::cli::RunRemote(r, SelfExe());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = ParseArgs(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "ember-run: " << e.what() << "\n";
    return 2;
  }
  try {
    if (!o.remote.board.empty()) return RunOnBoard(&o);
    return Run(o);
  } catch (const std::exception& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');  // one line, always
    std::cerr << "ember-run: " << msg << "\n";
    return 1;
  }
}
