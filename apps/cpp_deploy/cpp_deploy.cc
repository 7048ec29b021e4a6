// Deploys a compiled model: load the artifact, set one input from a .npy file, run, print the
// top-5 entries of output 0.   usage: cpp_deploy ARTIFACT_DIR INPUT_NAME INPUT.npy
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/npy.h>

#include <cstdio>

#include "../print_top5.h"

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
    PrintTop5(static_cast<const float*>(out->data), out.NumElements());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_deploy: %s\n", e.what());
    return 1;
  }
  return 0;
}
