// FFI overheads: what one packed call, one registry lookup and one small allocation cost.
// Each benchmark runs 5 repetitions and reports mean/median/stddev; quote the median.
//   build-a/bin/bench_ffi --benchmark_filter=PackedFunc
#include <benchmark/benchmark.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/packed_func.h>
#include <ember/runtime/registry.h>

namespace ember::runtime {
namespace {

EMBER_REGISTER_GLOBAL("bench.Sum3").set_body([](TVMArgs args, TVMRetValue* rv) {
  *rv = args[0].As<int64_t>() + args[1].As<int64_t>() + args[2].As<int64_t>();
});

void BM_PackedFuncCall0(benchmark::State& state) {
  PackedFunc f([](TVMArgs, TVMRetValue*) {});
  for (auto _ : state) benchmark::DoNotOptimize(f());
}

void BM_PackedFuncCall1(benchmark::State& state) {
  PackedFunc f([](TVMArgs args, TVMRetValue* rv) { *rv = args[0].As<int64_t>(); });
  int64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(f(++i));
}

void BM_PackedFuncCall3(benchmark::State& state) {
  PackedFunc f = *Registry::Get("bench.Sum3");
  int64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(f(++i, 2, 3));
}

void BM_TypedPackedFuncCall3(benchmark::State& state) {
  TypedPackedFunc<int64_t(int64_t, int64_t, int64_t)> f(
      [](int64_t a, int64_t b, int64_t c) { return a + b + c; }, "sum3");
  int64_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(f(++i, 2, 3));
}

void BM_TVMFuncCall3(benchmark::State& state) {
  TVMFunctionHandle f = nullptr;
  TVMFuncGetGlobal("bench.Sum3", &f);
  TVMValue args[3];
  int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  args[1].v_int64 = 2;
  args[2].v_int64 = 3;
  TVMValue ret;
  int ret_code;
  int64_t i = 0;
  for (auto _ : state) {
    args[0].v_int64 = ++i;
    benchmark::DoNotOptimize(TVMFuncCall(f, args, codes, 3, &ret, &ret_code));
    benchmark::DoNotOptimize(ret);
  }
  TVMFuncFree(f);
}

void BM_RegistryGet(benchmark::State& state) {
  const std::string name = "bench.Sum3";
  for (auto _ : state) benchmark::DoNotOptimize(Registry::Get(name));
}

void BM_NDArrayEmpty1KiB(benchmark::State& state) {
  for (auto _ : state) {
    NDArray a = NDArray::Empty({256}, kFloat32, kCPU);
    benchmark::DoNotOptimize(a->data);
  }
}

#define EMBER_BENCH(fn) BENCHMARK(fn)->Repetitions(5)->ReportAggregatesOnly(true)
EMBER_BENCH(BM_PackedFuncCall0);
EMBER_BENCH(BM_PackedFuncCall1);
EMBER_BENCH(BM_PackedFuncCall3);
EMBER_BENCH(BM_TypedPackedFuncCall3);
EMBER_BENCH(BM_TVMFuncCall3);
EMBER_BENCH(BM_RegistryGet);
EMBER_BENCH(BM_NDArrayEmpty1KiB);

}  // namespace
}  // namespace ember::runtime

BENCHMARK_MAIN();
