// What it costs a core to read, or to overwrite, cache lines another core has just written:
// the price a parallel kernel pays for each row it reads that the previous kernel's other thread
// produced (why schedules give every thread the same band of rows, kernel after kernel, and why
// MobileNetV2 at two threads loses a fifth of its time between kernels; README, Performance).
//
//   build/bin/bench_cross_core        # needs two CPUs; the timed thread on the first, a helper
//                                     # thread on the second
//
// Each iteration has a helper thread (or the timed thread itself) write the whole buffer, then
// times one pass of the timed thread over it: reading it (an XOR of its words) or writing it.
// "own" is the timed thread's own writes, still in its cache; "other" is the helper's, on the
// other core. Bytes/s is for the timed pass only (manual time).
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

// The first two CPUs this process may run on, or {-1, -1}.
std::pair<int, int> FirstTwoCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return {-1, -1};
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus.size() == 2 ? std::make_pair(cpus[0], cpus[1]) : std::make_pair(-1, -1);
}

// Read once, before the first benchmark pins the main thread to one of them.
const std::pair<int, int> kCpus = FirstTwoCpus();

bool PinTo(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

void WriteAll(std::vector<uint32_t>* buf, uint32_t value) {
  for (uint32_t& w : *buf) w = value;
}

uint32_t ReadAll(const std::vector<uint32_t>& buf) {
  uint32_t x = 0;
  for (uint32_t w : buf) x ^= w;
  return x;
}

// A thread on the second CPU that writes the buffer when asked.
class Writer {
 public:
  Writer(int cpu, std::vector<uint32_t>* buf) : buf_(buf), thread_([this, cpu] { Loop(cpu); }) {}
  ~Writer() {
    request_.store(kExit, std::memory_order_release);
    thread_.join();
  }
  void WriteAndWait(uint32_t value) {
    value_ = value;
    request_.store(kWrite, std::memory_order_release);
    while (request_.load(std::memory_order_acquire) != kIdle) {
    }
  }

 private:
  static constexpr int kIdle = 0, kWrite = 1, kExit = 2;
  void Loop(int cpu) {
    PinTo(cpu);
    for (;;) {
      const int r = request_.load(std::memory_order_acquire);
      if (r == kExit) return;
      if (r != kWrite) continue;
      WriteAll(buf_, value_);
      request_.store(kIdle, std::memory_order_release);
    }
  }
  std::vector<uint32_t>* buf_;
  uint32_t value_ = 0;
  std::atomic<int> request_{kIdle};
  std::thread thread_;
};

enum class Pass { kRead, kWrite };

void Run(benchmark::State& state, Pass pass, bool other) {
  const auto [first, second] = kCpus;
  if (first < 0 || !PinTo(first)) {
    state.SkipWithError("needs two CPUs this process may run on");
    return;
  }
  std::vector<uint32_t> buf(static_cast<size_t>(state.range(0)) * 1024 / sizeof(uint32_t), 1);
  Writer writer(second, &buf);
  uint32_t value = 1;
  for (auto _ : state) {
    ++value;
    if (other) {
      writer.WriteAndWait(value);
    } else {
      WriteAll(&buf, value);
    }
    const auto start = std::chrono::steady_clock::now();
    if (pass == Pass::kRead) {
      benchmark::DoNotOptimize(ReadAll(buf));
    } else {
      WriteAll(&buf, value + 1);
      benchmark::ClobberMemory();
    }
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * state.range(0) * 1024);
}

void BM_ReadOwnLines(benchmark::State& s) { Run(s, Pass::kRead, false); }
void BM_ReadOtherCoresLines(benchmark::State& s) { Run(s, Pass::kRead, true); }
void BM_WriteOwnLines(benchmark::State& s) { Run(s, Pass::kWrite, false); }
void BM_WriteOtherCoresLines(benchmark::State& s) { Run(s, Pass::kWrite, true); }

// KB: a small plane's tensor, MobileNetV2's 14x14 expanded tensor (300 KB), one of its 112x112.
#define EMBER_SIZES ->Arg(64)->Arg(300)->Arg(1600)->UseManualTime()
BENCHMARK(BM_ReadOwnLines) EMBER_SIZES;
BENCHMARK(BM_ReadOtherCoresLines) EMBER_SIZES;
BENCHMARK(BM_WriteOwnLines) EMBER_SIZES;
BENCHMARK(BM_WriteOtherCoresLines) EMBER_SIZES;

}  // namespace

BENCHMARK_MAIN();
