// The per-node profiler (run_individual), the run tracer and the time evaluator, all on a
// monotonic clock.
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>
#include <ember/runtime/threading.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>

#include "graph_executor/graph_executor.h"
#include "json_string.h"

namespace ember::runtime {
namespace {

using Clock = std::chrono::steady_clock;
static_assert(Clock::is_steady, "timings need a monotonic clock");

// How fast the number of calls per repeat grows while a repeat is shorter than min_repeat_ms.
constexpr double kGrowth = 1.618;
// Never grow past this many calls per repeat (a function that takes no time at all).
constexpr int64_t kMaxNumber = int64_t{1} << 30;

// Mean seconds per call of one repeat: calls \p body \p number times (more while the repeat
// lasts less than \p min_repeat_ms).
template <typename F>
double MeasureRepeat(F&& body, int64_t* number, int min_repeat_ms) {
  while (true) {
    auto t0 = Clock::now();
    for (int64_t i = 0; i < *number; ++i) body();
    double sec = std::chrono::duration<double>(Clock::now() - t0).count();
    double ms = sec * 1e3;
    if (ms >= min_repeat_ms || *number >= kMaxNumber) return sec / static_cast<double>(*number);
    double per_call_ms = std::max(ms / static_cast<double>(*number), 1e-9);
    double want = std::max(min_repeat_ms / per_call_ms + 1, *number * kGrowth);
    *number = std::min<int64_t>(kMaxNumber, static_cast<int64_t>(want));
  }
}

void CheckCounts(int number, int repeat, int min_repeat_ms, const char* who) {
  EMBER_CHECK(number >= 1 && repeat >= 1 && min_repeat_ms >= 0)
      << who << ": number and repeat must be at least 1 and min_repeat_ms at least 0 (got number "
      << number << ", repeat " << repeat << ", min_repeat_ms " << min_repeat_ms << ")";
}

}  // namespace

std::vector<double> TimeEvaluate(PackedFunc f, TVMArgs args, int number, int repeat,
                                 int min_repeat_ms, int cooldown_ms) {
  CheckCounts(number, repeat, min_repeat_ms, "time_evaluator");
  EMBER_CHECK(f != nullptr) << "time_evaluator: the function is null";
  TVMRetValue rv;
  f.CallPacked(args, &rv);  // warm-up: first-touch of memory, lazy initialisation
  std::vector<double> out;
  int64_t n = number;
  for (int r = 0; r < repeat; ++r) {
    if (cooldown_ms > 0 && r > 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(cooldown_ms));
    out.push_back(MeasureRepeat([&] { f.CallPacked(args, &rv); }, &n, min_repeat_ms));
  }
  return out;
}

PackedFunc TimeEvaluator(PackedFunc f, DLDevice dev, int number, int repeat, int min_repeat_ms,
                         int cooldown_ms) {
  EMBER_CHECK(dev.device_type == kDLCPU)
      << "time_evaluator: device " << dev << " is not supported; cpu only";
  CheckCounts(number, repeat, min_repeat_ms, "time_evaluator");
  return PackedFunc([=](TVMArgs args, TVMRetValue* rv) {
    std::vector<double> t = TimeEvaluate(f, args, number, repeat, min_repeat_ms, cooldown_ms);
    std::string bytes(reinterpret_cast<const char*>(t.data()), t.size() * sizeof(double));
    *rv = TVMByteArray{bytes.data(), bytes.size()};
  });
}

ProfileReport ProfileExecutor(const Module& executor, int number, int repeat, int min_repeat_ms) {
  CheckCounts(number, repeat, min_repeat_ms, "run_individual");
  auto* exec = const_cast<GraphExecutor*>(executor.as<GraphExecutor>());
  EMBER_CHECK(exec != nullptr) << "run_individual: not a GraphExecutor module";
  exec->Run();  // warm-up
  // Each op is timed alone, but as part of a run: workers stay awake between launches.
  threading::RunScope run;
  ProfileReport report;
  report.number = number;
  report.repeat = repeat;
  for (size_t i = 0; i < exec->NumOps(); ++i) {
    NodeTiming t = exec->DescribeOp(i);
    double sum = 0;
    int64_t n = number;
    for (int r = 0; r < repeat; ++r) {
      sum += MeasureRepeat([&] { exec->RunOp(i); }, &n, min_repeat_ms);
    }
    t.mean_us = sum / repeat * 1e6;
    report.total_us += t.mean_us;
    report.nodes.push_back(std::move(t));
  }
  std::stable_sort(report.nodes.begin(), report.nodes.end(),
                   [](const NodeTiming& a, const NodeTiming& b) { return a.mean_us > b.mean_us; });
  return report;
}

std::string TraceExecutorRuns(const Module& executor, int runs) {
  EMBER_CHECK(runs >= 1) << "trace: runs must be at least 1 (got " << runs << ")";
  auto* exec = const_cast<GraphExecutor*>(executor.as<GraphExecutor>());
  EMBER_CHECK(exec != nullptr) << "trace: not a GraphExecutor module";
  std::vector<NodeTiming> ops;
  for (size_t i = 0; i < exec->NumOps(); ++i) ops.push_back(exec->DescribeOp(i));
  exec->Run();  // warm-up, as for the profile: first-touch of memory is not the model's time
  // Times first, text afterwards, so that writing the JSON does not show up in the trace.
  std::vector<double> start_us, dur_us;
  start_us.reserve(ops.size() * runs);
  dur_us.reserve(ops.size() * runs);
  const auto origin = Clock::now();
  auto us_since = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::micro>(to - from).count();
  };
  for (int r = 0; r < runs; ++r) {
    threading::RunScope run;
    for (size_t i = 0; i < ops.size(); ++i) {
      auto t0 = Clock::now();
      exec->RunOp(i);
      auto t1 = Clock::now();
      start_us.push_back(us_since(origin, t0));
      dur_us.push_back(us_since(t0, t1));
    }
  }
  // The thread id as `top -H` and Perfetto's process view show it.
  const long tid = ::syscall(SYS_gettid);
  const long pid = ::getpid();
  std::ostringstream os;
  char num[64];
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  for (size_t k = 0; k < start_us.size(); ++k) {
    const NodeTiming& t = ops[k % ops.size()];
    std::snprintf(num, sizeof(num), "\"ts\": %.3f, \"dur\": %.3f", start_us[k], dur_us[k]);
    os << (k ? ",\n" : "\n") << "{\"name\": " << JsonString(t.name)
       << ", \"cat\": \"op\", \"ph\": \"X\", " << num << ", \"pid\": " << pid
       << ", \"tid\": " << tid << ", \"args\": {\"op\": " << JsonString(t.func_name)
       << ", \"node_id\": " << t.node_id << ", \"inputs\": " << JsonString(t.input_shapes)
       << ", \"output\": " << JsonString(t.shape) << ", \"dtype\": " << JsonString(t.dtype)
       << ", \"run\": " << k / ops.size() << "}}";
  }
  os << "\n]}\n";
  return os.str();
}

std::string ProfileReport::Table() const {
  size_t wname = 4, wfunc = 6, wshape = 5;
  for (const auto& t : nodes) {
    wname = std::max(wname, t.name.size());
    wfunc = std::max(wfunc, t.func_name.size());
    wshape = std::max(wshape, t.shape.size());
  }
  std::ostringstream os;
  char line[64];
  auto pad = [](const std::string& s, size_t w) { return s + std::string(w - s.size(), ' '); };
  os << pad("#", 4) << "  " << pad("Node", wname) << "  " << pad("Kernel", wfunc) << "  "
     << pad("Shape", wshape) << "  " << pad("Dtype", 8) << "  "
     << "   Time(us)  Share(%)\n";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeTiming& t = nodes[i];
    double share = total_us > 0 ? 100.0 * t.mean_us / total_us : 0.0;
    std::snprintf(line, sizeof(line), "%11.3f  %8.2f", t.mean_us, share);
    os << pad(std::to_string(i + 1), 4) << "  " << pad(t.name, wname) << "  "
       << pad(t.func_name, wfunc) << "  " << pad(t.shape, wshape) << "  " << pad(t.dtype, 8) << "  "
       << line << "\n";
  }
  std::snprintf(line, sizeof(line), "%11.3f  %8.2f", total_us, 100.0);
  os << pad("", 4) << "  " << pad("Total", wname) << "  " << pad("", wfunc) << "  "
     << pad("", wshape) << "  " << pad("", 8) << "  " << line << "\n";
  os << "(" << nodes.size() << " operators; mean of " << repeat << " repeats of at least " << number
     << " calls each)\n";
  return os.str();
}

std::string ProfileReport::Json() const {
  std::ostringstream os;
  char num[64];
  std::snprintf(num, sizeof(num), "%.3f", total_us);
  os << "{\"total_us\": " << num << ", \"number\": " << number << ", \"repeat\": " << repeat
     << ", \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeTiming& t = nodes[i];
    double share = total_us > 0 ? 100.0 * t.mean_us / total_us : 0.0;
    os << (i ? ", " : "") << "{\"node_id\": " << t.node_id << ", \"name\": " << JsonString(t.name)
       << ", \"func_name\": " << JsonString(t.func_name) << ", \"shape\": " << JsonString(t.shape)
       << ", \"dtype\": " << JsonString(t.dtype);
    std::snprintf(num, sizeof(num), "%.3f", t.mean_us);
    os << ", \"time_us\": " << num;
    std::snprintf(num, sizeof(num), "%.2f", share);
    os << ", \"percent\": " << num << "}";
  }
  os << "]}";
  return os.str();
}

EMBER_REGISTER_GLOBAL("runtime.time_evaluator").set_body([](TVMArgs args, TVMRetValue* rv) {
  EMBER_CHECK_GE(args.size(), 7) << "runtime.time_evaluator(module, func_name, device_type, "
                                    "device_id, number, repeat, min_repeat_ms[, cooldown_ms])";
  Module m = args[0].operator Module();
  std::string name = args[1].operator std::string();
  PackedFunc f = m.GetFunction(name, true);
  EMBER_CHECK(f != nullptr) << "time_evaluator: the module has no function \"" << name << "\"";
  DLDevice dev{static_cast<DLDeviceType>(args[2].operator int()), args[3].operator int()};
  int cooldown = args.size() > 7 ? args[7].operator int() : 0;
  *rv = TimeEvaluator(f, dev, args[4].operator int(), args[5].operator int(),
                      args[6].operator int(), cooldown);
});

}  // namespace ember::runtime
