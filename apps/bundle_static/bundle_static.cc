// A model in one executable: kernels from `emberc --system-lib`, graph.json and params.bin embedded
// as byte arrays, the runtime linked statically. Nothing is loaded at run time (no dlopen, no
// files), which is the shape iOS and many Android apps need.
//   usage: bundle_static [INPUT.npy [OUTPUT.npy]]
// Without INPUT, input 0 is filled with a fixed pattern. Prints the top-5 entries of output 0 and,
// with OUTPUT, writes output 0 there.
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/npy.h>
#include <ember/runtime/registry.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "../print_top5.h"

// Defined by the generated model_data.c.
extern "C" {
extern const unsigned char ember_bundle_graph_json[];
extern const unsigned long ember_bundle_graph_json_size;
extern const unsigned char ember_bundle_params[];
extern const unsigned long ember_bundle_params_size;
}

using namespace ember::runtime;

int main(int argc, char** argv) {
  if (argc > 3) {
    std::fprintf(stderr, "usage: %s [INPUT.npy [OUTPUT.npy]]\n", argv[0]);
    return 2;
  }
  try {
    Module lib = (*Registry::Get("runtime.SystemLib"))();
    std::string graph(reinterpret_cast<const char*>(ember_bundle_graph_json),
                      ember_bundle_graph_json_size);
    NamedArrays params = LoadParams(reinterpret_cast<const char*>(ember_bundle_params),
                                    ember_bundle_params_size, "embedded params.bin");
    Module factory = CreateGraphExecutorFactory(graph, params, lib);
    Module gmod = factory.GetFunction("default")(kCPU);

    NDArray input = gmod.GetFunction("get_input")(0);
    if (argc >= 2) {
      LoadNpyInto(argv[1], [&](const NpyHeader& h) {
        if (h.shape != std::vector<int64_t>(input.Shape().begin(), input.Shape().end()) ||
            h.dtype != input.DataType()) {
          throw std::runtime_error(std::string(argv[1]) + ": shape or dtype differs from input 0");
        }
        return input->data;
      });
    } else if (input.DataType() == kFloat32) {
      float* x = static_cast<float*>(input->data);
      for (int64_t i = 0; i < input.NumElements(); ++i) x[i] = std::sin(0.01f * i);
    }
    gmod.GetFunction("run")();

    NDArray out = gmod.GetFunction("get_output")(0);
    if (argc == 3) {
      SaveNpy(argv[2], out.DataType(), std::vector<int64_t>(out.Shape().begin(), out.Shape().end()),
              out->data, out.NBytes());
    }
    if (out.DataType() != kFloat32) return 0;
    PrintTop5(static_cast<const float*>(out->data), out.NumElements());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bundle_static: %s\n", e.what());
    return 1;
  }
  return 0;
}
