// A separate binary (outside the ember_runtime_tests glob) because it replaces the global
// operator new: it proves GraphExecutor::run() allocates nothing.
#include <ember/runtime/graph_executor.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

namespace {
thread_local bool g_count_allocs = false;
thread_local int64_t g_allocs = 0;
}  // namespace

// GCC cannot see that these replace the global pair, and flags free() of "new" memory.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  if (g_count_allocs) ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) {
  if (g_count_allocs) ++g_allocs;
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

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
  g_allocs = 0;
  g_count_allocs = true;
  for (int i = 0; i < 100; ++i) run.CallPacked(TVMArgs(&v, &code, 0), &rv);
  g_count_allocs = false;
  EXPECT_EQ(g_allocs, 0) << "run() allocated " << g_allocs << " times in 100 runs";
  // The counter works: an allocation on this thread is seen.
  g_count_allocs = true;
  std::vector<int>* probe = new std::vector<int>(4);
  g_count_allocs = false;
  delete probe;
  EXPECT_GE(g_allocs, 1);
}

}  // namespace
}  // namespace ember::runtime
