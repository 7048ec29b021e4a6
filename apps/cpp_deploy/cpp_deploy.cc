// Deploys a compiled model: load the artifact, set one input from a .npy file, run, print the
// top-5 entries of output 0.   usage: cpp_deploy ARTIFACT_DIR INPUT_NAME INPUT.npy
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/npy.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

using namespace ember::runtime;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s ARTIFACT_DIR INPUT_NAME INPUT.npy\n", argv[0]);
    return 2;
  }
  try {
    Module factory = LoadArtifact(argv[1]);
    Module gmod = factory.GetFunction("default")(kCPU);

    NDArray input;
    LoadNpyInto(argv[3], [&](const NpyHeader& h) {
      input = NDArray::Empty(ShapeTuple(h.shape), h.dtype, kCPU);
      return input->data;
    });
    gmod.GetFunction("set_input")(argv[2], input);
    gmod.GetFunction("run")();

    NDArray out = gmod.GetFunction("get_output")(0);
    if (out.DataType() != kFloat32) {
      std::fprintf(stderr, "cpp_deploy: output 0 is not float32\n");
      return 1;
    }
    const float* y = static_cast<const float*>(out->data);
    std::vector<int64_t> order(static_cast<size_t>(out.NumElements()));
    std::iota(order.begin(), order.end(), 0);
    size_t k = std::min<size_t>(5, order.size());
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int64_t a, int64_t b) { return y[a] > y[b]; });
    for (size_t i = 0; i < k; ++i) {
      std::printf("%zu: index %lld score %.6f\n", i + 1, static_cast<long long>(order[i]),
                  y[order[i]]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_deploy: %s\n", e.what());
    return 1;
  }
  return 0;
}
