// Proves GraphExecutor::run() allocates nothing (see alloc_counter.h).
#include <ember/runtime/graph_executor.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "alloc_counter.h"

namespace ember::runtime {
namespace {

TEST(GraphExecutor, RunAllocatesNothing) {
  Module gmod =
      LoadArtifact(std::string(EMBER_GRAPH_ARTIFACTS) + "/mlp").GetFunction("default")(kCPU);
  std::vector<float> x(8, 0.5f);
  NDArray in = NDArray::Empty(ShapeTuple({1, 8}), kFloat32, kCPU);
  in.CopyFromBytes(x.data(), x.size() * sizeof(float));
  gmod.GetFunction("set_input")("data", in);
  PackedFunc run = gmod.GetFunction("run");
  run();  // the first run may initialise things lazily below
  TVMValue v;
  int code = 0;
  TVMRetValue rv;
  {
    ember::testing::AllocCounter counter;
    for (int i = 0; i < 100; ++i) run.CallPacked(TVMArgs(&v, &code, 0), &rv);
    EXPECT_EQ(counter.count(), 0) << "run() allocated " << counter.count() << " times in 100 runs";
  }
  // The counter works: an allocation on this thread is seen.
  ember::testing::AllocCounter counter;
  std::vector<int>* probe = new std::vector<int>(4);
  EXPECT_GE(counter.count(), 1);
  delete probe;
}

}  // namespace
}  // namespace ember::runtime
