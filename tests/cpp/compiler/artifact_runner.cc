// RunArtifact (see artifact_runner.h).
#include "artifact_runner.h"

#include <ember/runtime/graph_executor.h>

namespace ember::compiler::testing {

std::vector<std::vector<float>> RunArtifact(const std::string& dir,
                                            const std::vector<FloatInput>& inputs) {
  using namespace runtime;
  Module gmod = LoadArtifact(dir).GetFunction(kDefaultModuleName)(kCPU);
  PackedFunc set_input = gmod.GetFunction("set_input");
  for (const FloatInput& in : inputs) {
    NDArray a = NDArray::Empty(ShapeTuple(in.shape), DLDataType{kDLFloat, 32, 1}, kCPU);
    a.CopyFromBytes(in.values.data(), in.values.size() * sizeof(float));
    set_input(in.name, a);
  }
  gmod.GetFunction("run")();
  std::vector<std::vector<float>> outs;
  int n = gmod.GetFunction("get_num_outputs")();
  for (int i = 0; i < n; ++i) {
    NDArray y = gmod.GetFunction("get_output")(i);
    const float* p = static_cast<const float*>(y->data);
    outs.emplace_back(p, p + y.NumElements());
  }
  return outs;
}

}  // namespace ember::compiler::testing
