// Graph executor overheads: run() on a chain of 100 do-nothing kernels (target < 50 ns per node),
// artifact loading, and a thread-safe ExecutorPool run against one executor's set_input / run /
// get_output, on the test artifacts (tests/cpp/runtime/artifacts).
#include <benchmark/benchmark.h>
#include <ember/runtime/executor_pool.h>
#include <ember/runtime/graph_executor.h>

#include <string>

namespace {

using namespace ember::runtime;

constexpr int kChainNodes = 100;
const std::string kArtifacts = EMBER_GRAPH_ARTIFACTS;

// x -> nop -> nop -> ... (100 operators), every tensor float32[1], ping-ponging two storages.
std::string NopChainGraph() {
  std::string nodes = R"({"op": "null", "name": "x", "inputs": []})";
  std::string dltype = "\"float32\"", shape = "[1]", sid = "0", row_ptr = "0, 1";
  for (int i = 1; i <= kChainNodes; ++i) {
    nodes += R"(, {"op": "tvm_op", "name": "nop)" + std::to_string(i) + R"(", "inputs": [[)" +
             std::to_string(i - 1) +
             R"(, 0, 0]], "attrs": {"func_name": "nop", "num_inputs": "1", "num_outputs": "1",
              "flatten_data": "0"}})";
    dltype += ", \"float32\"";
    shape += ", [1]";
    sid += ", " + std::to_string(1 + i % 2);
    row_ptr += ", " + std::to_string(i + 1);
  }
  return R"({"nodes": [)" + nodes + R"(], "arg_nodes": [0], "node_row_ptr": [)" + row_ptr +
         R"(], "heads": [[)" + std::to_string(kChainNodes) +
         R"(, 0, 0]], "attrs": {"dltype": ["list_str", [)" + dltype +
         R"(]], "shape": ["list_shape", [)" + shape + R"(]], "storage_id": ["list_int", [)" + sid +
         "]]}}";
}

void BM_RunNopChain100(benchmark::State& state) {
  Module lib = Module::LoadFromFile(kArtifacts + "/graph_kernels.so");
  Module gmod = CreateGraphExecutor(NopChainGraph(), lib, {kCPU});
  PackedFunc run = gmod.GetFunction("run");
  TVMValue v;
  int code = 0;
  TVMRetValue rv;
  for (auto _ : state) run.CallPacked(TVMArgs(&v, &code, 0), &rv);
  state.counters["per_node"] =
      benchmark::Counter(static_cast<double>(state.iterations()) * kChainNodes,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_RunNopChain100);

void BM_LoadArtifactDirectory(benchmark::State& state) {
  for (auto _ : state) {
    Module gmod = LoadArtifact(kArtifacts + "/mlp").GetFunction("default")(kCPU);
    benchmark::DoNotOptimize(gmod.get());
  }
}
BENCHMARK(BM_LoadArtifactDirectory)->Unit(benchmark::kMicrosecond);

void BM_LoadArtifactSingleFile(benchmark::State& state) {
  for (auto _ : state) {
    Module gmod = LoadArtifact(kArtifacts + "/mlp_single.so").GetFunction("default")(kCPU);
    benchmark::DoNotOptimize(gmod.get());
  }
}
BENCHMARK(BM_LoadArtifactSingleFile)->Unit(benchmark::kMicrosecond);

void BM_CreateExecutorFromFactory(benchmark::State& state) {
  Module factory = LoadArtifact(kArtifacts + "/mlp");
  PackedFunc create = factory.GetFunction("default");
  for (auto _ : state) {
    Module gmod = create(kCPU);
    benchmark::DoNotOptimize(gmod.get());
  }
}
BENCHMARK(BM_CreateExecutorFromFactory)->Unit(benchmark::kMicrosecond);

// One executor, one thread: what a pool call adds to (check-out, every input, copy-out).
void BM_ExecutorSetRunGetMlp(benchmark::State& state) {
  Module gmod = LoadArtifact(kArtifacts + "/mlp").GetFunction("default")(kCPU);
  PackedFunc set_input = gmod.GetFunction("set_input"), run = gmod.GetFunction("run");
  PackedFunc get_output = gmod.GetFunction("get_output");
  NDArray x = NDArray::Empty(ShapeTuple({1, 8}), kFloat32, kCPU);
  NDArray y = NDArray::Empty(ShapeTuple({1, 10}), kFloat32, kCPU);
  for (auto _ : state) {
    set_input(0, x);
    run();
    get_output(0, y);
  }
}
BENCHMARK(BM_ExecutorSetRunGetMlp);

// The same work through one shared pool from 1, 2 and 8 threads (per-call time across threads).
void BM_ExecutorPoolRunMlp(benchmark::State& state) {
  static ExecutorPool* pool = nullptr;
  if (state.thread_index() == 0 && pool == nullptr)
    pool = new ExecutorPool(LoadArtifact(kArtifacts + "/mlp"));
  NDArray x = NDArray::Empty(ShapeTuple({1, 8}), kFloat32, kCPU);
  NDArray y = NDArray::Empty(ShapeTuple({1, 10}), kFloat32, kCPU);
  std::vector<const DLTensor*> in{x.operator->()};
  std::vector<DLTensor*> out{&y.get_mutable()->dl_tensor};
  for (auto _ : state) pool->Run(in, out);
  state.counters["executors"] =
      benchmark::Counter(pool->NumExecutors(), benchmark::Counter::kAvgThreads);
}
BENCHMARK(BM_ExecutorPoolRunMlp)->Threads(1)->Threads(2)->Threads(8)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
