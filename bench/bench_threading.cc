// Cost of the runtime's parallel-launch and workspace paths (targets, not tests): an empty
// TVMBackendParallelLaunch should take <= 2 us on 2 threads.
//
//   build/bin/bench_threading --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <dlpack/dlpack.h>
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/threading.h>

#include <cstdlib>

namespace {

namespace threading = ember::runtime::threading;

int EmptyTask(int, TVMParallelGroupEnv*, void*) { return 0; }

int BarrierTask(int task_id, TVMParallelGroupEnv* penv, void*) {
  return TVMBackendParallelBarrier(task_id, penv);
}

// Workers are started (and warmed) outside the timed loop.
void UsePool(benchmark::State& state, int nthreads) {
  threading::SetNumThreads(nthreads);
  if (TVMBackendParallelLaunch(EmptyTask, nullptr, 0) != 0) state.SkipWithError(TVMGetLastError());
  state.counters["threads"] = threading::NumThreads();
}

void BM_EmptyLaunch(benchmark::State& state) {
  UsePool(state, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    if (TVMBackendParallelLaunch(EmptyTask, nullptr, 0) != 0) {
      state.SkipWithError(TVMGetLastError());
      break;
    }
  }
}
BENCHMARK(BM_EmptyLaunch)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

void BM_LaunchWithBarrier(benchmark::State& state) {
  UsePool(state, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    if (TVMBackendParallelLaunch(BarrierTask, nullptr, 0) != 0) {
      state.SkipWithError(TVMGetLastError());
      break;
    }
  }
}
BENCHMARK(BM_LaunchWithBarrier)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

// More tasks than threads: the extra tasks are claimed from a shared counter.
void BM_EmptyLaunch16Tasks(benchmark::State& state) {
  UsePool(state, static_cast<int>(state.range(0)));
  for (auto _ : state) {
    if (TVMBackendParallelLaunch(EmptyTask, nullptr, 16) != 0) {
      state.SkipWithError(TVMGetLastError());
      break;
    }
  }
}
BENCHMARK(BM_EmptyLaunch16Tasks)->ArgName("threads")->Arg(2)->UseRealTime();

// A kernel's scratch buffer: one allocation and its free, after warm-up.
void BM_WorkspaceAllocFree(benchmark::State& state) {
  const uint64_t nbytes = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    void* p = TVMBackendAllocWorkspace(kDLCPU, 0, nbytes, kDLFloat, 32);
    benchmark::DoNotOptimize(p);
    TVMBackendFreeWorkspace(kDLCPU, 0, p);
  }
}
BENCHMARK(BM_WorkspaceAllocFree)->Arg(256)->Arg(1 << 20);

}  // namespace

BENCHMARK_MAIN();
