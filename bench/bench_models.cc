// Whole-model latency through the runtime API (LoadArtifact -> set_input -> run), at 1 and 2
// threads. Artifacts come from $EMBER_BENCH_ARTIFACTS/<model> (emberc compile output folders,
// e.g. compiled by bench/compare_ort.py under its --work folder); missing models are skipped with
// a message. bench/compare_ort.py is the side-by-side comparison with ONNX Runtime.
#include <benchmark/benchmark.h>
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/threading.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace {

using namespace ember::runtime;

void BM_Model(benchmark::State& state, const std::string& dir) {
  threading::SetNumThreads(static_cast<int>(state.range(0)));
  Module gmod = LoadArtifact(dir).GetFunction("default")(kCPU);
  Map<String, ObjectRef> info = gmod.GetFunction("get_input_info")();
  Map<String, ShapeTuple> shapes(ObjectRefInternal::Data(info.at(String("shape"))));
  Map<String, String> dtypes(ObjectRefInternal::Data(info.at(String("dtype"))));
  PackedFunc set_input = gmod.GetFunction("set_input");
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (const auto& [name, shape] : shapes) {
    DLDataType dtype = StringToDLDataType(dtypes.at(name).str());
    NDArray arr = NDArray::Empty(shape, dtype, kCPU);
    if (dtype.code == kDLFloat && dtype.bits == 32) {
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      for (int64_t i = 0; i < n; ++i) static_cast<float*>(arr->data)[i] = dist(rng);
    }
    set_input(name, arr);
  }
  PackedFunc run = gmod.GetFunction("run");
  run();  // first run: workspaces and thread pool warm
  for (auto _ : state) run();
}

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

int main(int argc, char** argv) {
  const char* root = std::getenv("EMBER_BENCH_ARTIFACTS");
  if (root == nullptr || *root == '\0') {
    std::fprintf(stderr,
                 "bench_models: set EMBER_BENCH_ARTIFACTS to a folder holding compiled models "
                 "(<folder>/mlp, cnn, resnet18, mobilenetv2, each an emberc output folder)\n");
    return 2;
  }
  int registered = 0;
  for (const char* model : {"mlp", "cnn", "resnet18", "mobilenetv2"}) {
    std::string dir = std::string(root) + "/" + model;
    if (!IsDir(dir)) {
      std::fprintf(stderr, "bench_models: %s not found, skipped\n", dir.c_str());
      continue;
    }
    benchmark::RegisterBenchmark(model, BM_Model, dir)
        ->Arg(1)
        ->Arg(2)
        ->ArgName("threads")
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    ++registered;
  }
  if (registered == 0) {
    std::fprintf(stderr, "bench_models: no compiled model under %s\n", root);
    return 2;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
