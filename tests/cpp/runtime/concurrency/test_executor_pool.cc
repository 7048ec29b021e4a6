// Concurrent runs: ExecutorPool (executor_pool.h) from many threads, through C++ and the C ABI,
// against a single-threaded reference; and one executor's stateful calls from several threads,
// which must be refused rather than tear results. scripts/test.sh also runs this binary under
// ThreadSanitizer.
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/executor_pool.h>
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>
#include <ember/runtime/threading.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../ndarray_test_util.h"

namespace {

using namespace ember::runtime;  // NOLINT(build/namespaces)
using ember::runtime::test_util::ErrorOf;
using ember::runtime::test_util::Floats;
using ember::runtime::test_util::Values;

const std::string kMlp = std::string(EMBER_GRAPH_ARTIFACTS) + "/mlp";
constexpr int kThreads = 8;
constexpr int kRunsPerThread = 1000;

// The mlp test artifact's input for run \p i of thread \p t: every (t, i) pair differs.
std::vector<float> MlpInput(int t, int i) {
  std::vector<float> x(8);
  for (int k = 0; k < 8; ++k) {
    x[static_cast<size_t>(k)] = 0.01f * static_cast<float>((t * 131 + i * 17 + k * 7) % 97) - 0.4f;
  }
  return x;
}

// Outputs of one executor, one run at a time on this thread: the reference.
std::vector<std::vector<std::vector<float>>> Reference(const Module& factory, int threads,
                                                       int runs) {
  Module gmod = factory.GetFunction("default")(kCPU);
  std::vector<std::vector<std::vector<float>>> out(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) {
    for (int i = 0; i < runs; ++i) {
      gmod.GetFunction("set_input")("data", Floats({1, 8}, MlpInput(t, i)));
      gmod.GetFunction("run")();
      out[static_cast<size_t>(t)].push_back(Values(gmod.GetFunction("get_output")(0)));
    }
  }
  return out;
}

TEST(ExecutorPool, EightThreadsTimesAThousandRunsMatchTheSingleThreadedReference) {
  Module factory = LoadArtifact(kMlp);
  auto want = Reference(factory, kThreads, kRunsPerThread);
  ExecutorPool pool(factory);
  ASSERT_EQ(pool.NumInputs(), 1);  // data; w0, b0, w1 are params
  EXPECT_EQ(pool.InputName(0), "data");
  ASSERT_EQ(pool.NumOutputs(), 1);
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRunsPerThread; ++i) {
        try {
          std::vector<NDArray> outs = pool.Run({{"data", Floats({1, 8}, MlpInput(t, i))}});
          if (outs.size() != 1 || Values(outs[0]) != want[t][static_cast<size_t>(i)]) ++mismatches;
        } catch (const Error&) {
          ++errors;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
  EXPECT_GE(pool.NumExecutors(), 1);
  EXPECT_LE(pool.NumExecutors(), kThreads);
}

TEST(ExecutorPool, ABoundedPoolMakesNoMoreExecutorsThanItsBound) {
  Module factory = LoadArtifact(kMlp);
  auto want = Reference(factory, kThreads, 50);
  ExecutorPool pool(factory, /*max_executors=*/2);
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      NDArray y = NDArray::Empty(ShapeTuple({1, 10}), kFloat32, kCPU);
      for (int i = 0; i < 50; ++i) {
        NDArray x = Floats({1, 8}, MlpInput(t, i));
        pool.Run({x.operator->()}, {&y.get_mutable()->dl_tensor});  // outputs written in place
        if (Values(y) != want[t][static_cast<size_t>(i)]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_LE(pool.NumExecutors(), 2);
}

TEST(ExecutorPool, ErrorsNameTheInputAndLeaveThePoolUsable) {
  ExecutorPool pool(LoadArtifact(kMlp));
  NDArray x = Floats({1, 8}, MlpInput(0, 0));
  EXPECT_EQ(ErrorOf([&] { pool.Run(std::vector<std::pair<std::string, NDArray>>{}); }),
            "ExecutorPool::Run: input \"data\" is missing; every call gives every input (data)");
  EXPECT_EQ(ErrorOf([&] {
              pool.Run({{"data", x}, {"img", x}});
            }),
            "ExecutorPool::Run: no input named \"img\"; inputs are: data");
  EXPECT_EQ(ErrorOf([&] {
              pool.Run({{"data", x}, {"data", x}});
            }),
            "ExecutorPool::Run: input \"data\" is given twice");
  EXPECT_EQ(ErrorOf([&] {
              pool.Run({{"data", Floats({1, 4}, {1, 2, 3, 4})}});
            }),
            "set_input \"data\": expected float32[1, 8], got float32[1, 4]");
  EXPECT_EQ(ErrorOf([&] { pool.Run({x.operator->()}, {}); }),
            "ExecutorPool::Run: expected 1 inputs and 1 outputs, got 1 and 0");
  EXPECT_NE(ErrorOf([] { ExecutorPool bad(LoadArtifact(kMlp), -1); }).find("max_executors"),
            std::string::npos);
  // The failed calls returned their executor: one executor still serves sequential calls.
  EXPECT_EQ(pool.Run({{"data", x}}).size(), 1u);
  EXPECT_EQ(pool.NumExecutors(), 1);
}

// ---- a kernel library written here: a parallel kernel, and one that blocks on demand

constexpr int64_t kLen = 4096;

struct ScaleJob {
  const float* x;
  const float* w;
  float* y;
};

int ScaleTask(int task, TVMParallelGroupEnv* env, void* cdata) {
  auto* job = static_cast<ScaleJob*>(cdata);
  int64_t chunk = (kLen + env->num_task - 1) / env->num_task;
  int64_t end = std::min<int64_t>(kLen, (task + 1) * chunk);
  for (int64_t i = task * chunk; i < end; ++i) job->y[i] = job->x[i] * job->w[i] + 0.5f;
  return 0;
}

// What the blocking kernel waits for, while a test drives the executor from another thread.
struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool armed = false, entered = false, released = false;
};
Gate g_gate;

class TestKernels : public ModuleNode {
 public:
  const char* type_key() const final { return "test_kernels"; }
  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>&) final {
    if (name.str() == "pscale") {  // y = x * w + 0.5 over a parallel launch
      return PackedFunc([](TVMArgs args, TVMRetValue*) {
        ScaleJob job{static_cast<const float*>(args[0].operator DLTensor*()->data),
                     static_cast<const float*>(args[1].operator DLTensor*()->data),
                     static_cast<float*>(args[2].operator DLTensor*()->data)};
        EMBER_CHECK_EQ(TVMBackendParallelLaunch(ScaleTask, &job, 0), 0) << TVMGetLastError();
      });
    }
    if (name.str() == "copy_blocking") {  // y = x; waits inside when the gate is armed
      return PackedFunc([](TVMArgs args, TVMRetValue*) {
        const DLTensor* x = args[0].operator DLTensor*();
        DLTensor* y = args[1].operator DLTensor*();
        std::memcpy(y->data, x->data, 4 * sizeof(float));
        std::unique_lock<std::mutex> lock(g_gate.mu);
        if (!g_gate.armed) return;
        g_gate.entered = true;
        g_gate.cv.notify_all();
        g_gate.cv.wait(lock, [] { return g_gate.released; });
      });
    }
    return PackedFunc();
  }
};

std::string OneOpGraph(const char* func, int64_t len, bool with_param) {
  std::string n = std::to_string(len);
  std::string nodes = R"({"op": "null", "name": "x", "inputs": []},)";
  std::string inputs = "[[0, 0, 0]";
  if (with_param) {
    nodes += R"({"op": "null", "name": "w", "inputs": []},)";
    inputs += ", [1, 0, 0]";
  }
  inputs += "]";
  int op = with_param ? 2 : 1;
  std::string n_in = with_param ? "2" : "1";
  std::string shapes =
      with_param ? "[[" + n + "], [" + n + "], [" + n + "]]" : "[[" + n + "], [" + n + "]]";
  std::string types =
      with_param ? R"(["float32", "float32", "float32"])" : R"(["float32", "float32"])";
  std::string sids = with_param ? "[0, 1, 2]" : "[0, 1]";
  std::string args = with_param ? "[0, 1]" : "[0]";
  std::string rows = with_param ? "[0, 1, 2, 3]" : "[0, 1, 2]";
  return R"({"nodes": [)" + nodes + R"({"op": "tvm_op", "name": "op", "inputs": )" + inputs +
         R"(, "attrs": {"func_name": ")" + func + R"(", "num_inputs": ")" + n_in +
         R"(", "num_outputs": "1", "flatten_data": "0"}}], "arg_nodes": )" + args +
         R"(, "node_row_ptr": )" + rows + R"(, "heads": [[)" + std::to_string(op) +
         R"(, 0, 0]], "attrs": {"dltype": ["list_str", )" + types +
         R"(], "shape": ["list_shape", )" + shapes + R"(], "storage_id": ["list_int", )" + sids +
         "]}}";
}

Module TestLib() { return Module(ObjectPtr<Object>(make_object<TestKernels>())); }

// Concurrent runs whose kernels launch parallel loops at once: the thread pool is shared.
TEST(ExecutorPool, ParallelKernelsFromManyThreadsShareTheThreadPoolCorrectly) {
  threading::SetNumThreads(4);
  std::vector<float> w(kLen);
  for (int64_t i = 0; i < kLen; ++i) w[static_cast<size_t>(i)] = 0.001f * static_cast<float>(i);
  Module factory = CreateGraphExecutorFactory(OneOpGraph("pscale", kLen, true),
                                              {{"w", Floats({kLen}, w)}}, TestLib());
  ExecutorPool pool(factory);
  constexpr int kRuns = 200;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<float> x(kLen), want(kLen);
      for (int i = 0; i < kRuns; ++i) {
        for (int64_t k = 0; k < kLen; ++k) {
          size_t s = static_cast<size_t>(k);
          x[s] = static_cast<float>((t * 7 + i + k) % 13);
          want[s] = x[s] * w[s] + 0.5f;
        }
        std::vector<NDArray> outs = pool.Run({{"x", Floats({kLen}, x)}});
        if (Values(outs[0]) != want) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  threading::SetNumThreads(0);
  EXPECT_EQ(mismatches.load(), 0);
}

// The pool through the C ABI only: global functions, module functions, TVMFuncCall.
TEST(ExecutorPool, TheCAbiRunsItFromManyThreads) {
  Module factory = LoadArtifact(kMlp);
  auto want = Reference(factory, kThreads, 100);
  TVMFunctionHandle create = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("runtime.create_executor_pool", &create), 0);
  ASSERT_NE(create, nullptr);
  TVMValue arg[2];
  int code[2] = {kTVMModuleHandle, kDLInt};
  arg[0].v_handle = static_cast<Object*>(factory.get());  // handles are Object*
  arg[1].v_int64 = 0;
  TVMValue ret;
  int ret_code = 0;
  ASSERT_EQ(TVMFuncCall(create, arg, code, 2, &ret, &ret_code), 0) << TVMGetLastError();
  ASSERT_EQ(ret_code, kTVMModuleHandle);
  TVMModuleHandle pool = ret.v_handle;
  TVMFunctionHandle run = nullptr;
  ASSERT_EQ(TVMModGetFunction(pool, "run", 0, &run), 0);
  ASSERT_NE(run, nullptr);
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      float y[10];
      int64_t x_shape[2] = {1, 8}, y_shape[2] = {1, 10};
      for (int i = 0; i < 100; ++i) {
        std::vector<float> x = MlpInput(t, i);
        DLTensor in{x.data(), kCPU, 2, kFloat32, x_shape, nullptr, 0};
        DLTensor out{y, kCPU, 2, kFloat32, y_shape, nullptr, 0};
        TVMValue args[2];
        int codes[2] = {kTVMDLTensorHandle, kTVMDLTensorHandle};
        args[0].v_handle = &in;
        args[1].v_handle = &out;
        TVMValue rv;
        int rv_code = 0;
        if (TVMFuncCall(run, args, codes, 2, &rv, &rv_code) != 0) {
          ++failures;
          continue;
        }
        if (std::vector<float>(y, y + 10) != want[t][static_cast<size_t>(i)]) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  TVMFuncFree(run);
  TVMModFree(pool);
  TVMFuncFree(create);
}

// ---- one executor, several threads: refused, never torn

TEST(GraphExecutorConcurrency, ACallOverlappingAnotherThreadsCallIsRefused) {
  Module factory = CreateGraphExecutorFactory(OneOpGraph("copy_blocking", 4, false), {}, TestLib());
  Module gmod = factory.GetFunction("default")(kCPU);
  NDArray x = Floats({4}, {1, 2, 3, 4});
  NDArray y = NDArray::Empty(ShapeTuple({4}), kFloat32, kCPU);
  {
    std::lock_guard<std::mutex> lock(g_gate.mu);
    g_gate.entered = g_gate.released = false;
    g_gate.armed = true;
  }
  std::thread runner([&] { gmod.GetFunction("run")(); });
  {
    std::unique_lock<std::mutex> lock(g_gate.mu);
    g_gate.cv.wait(lock, [] { return g_gate.entered; });
  }
  // The runner is inside run(): every stateful call from here must be refused.
  const std::string tail =
      " called from two threads at once (another thread is in run on this executor); an "
      "executor serves one call at a time: use an ExecutorPool (C++ "
      "ember/runtime/executor_pool.h, the global runtime.create_executor_pool, Python "
      "ember.ExecutorPool; not in the minimal runtime) for concurrent runs, or one executor per "
      "thread";
  EXPECT_EQ(ErrorOf([&] { gmod.GetFunction("run")(); }), "GraphExecutor::run" + tail);
  EXPECT_EQ(ErrorOf([&] { gmod.GetFunction("set_input")("x", x); }),
            "GraphExecutor::set_input" + tail);
  EXPECT_EQ(ErrorOf([&] { gmod.GetFunction("get_output")(0); }),
            "GraphExecutor::get_output" + tail);
  EXPECT_EQ(ErrorOf([&] { gmod.GetFunction("get_output")(0, y); }),
            "GraphExecutor::get_output" + tail);
  EXPECT_EQ(ErrorOf([&] { gmod.GetFunction("set_input_zero_copy")("x", x); }),
            "GraphExecutor::set_input_zero_copy" + tail);
  EXPECT_EQ(ErrorOf([&] { gmod.GetFunction("profile")(1, 1, 0); }),
            "GraphExecutor::profile" + tail);
  {
    std::lock_guard<std::mutex> lock(g_gate.mu);
    g_gate.armed = false;
    g_gate.released = true;
  }
  g_gate.cv.notify_all();
  runner.join();
  // Once the other thread's call returned, this thread may use the executor.
  gmod.GetFunction("set_input")("x", x);
  gmod.GetFunction("run")();
  gmod.GetFunction("get_output")(0, y);
  EXPECT_EQ(Values(y), std::vector<float>({1, 2, 3, 4}));
}

// Eight threads drive one executor with no lock of their own. Calls that overlap are refused;
// every output a call did return is the output of some input, never a mix of two runs.
TEST(GraphExecutorConcurrency, OneExecutorFromEightThreadsNeverReturnsATornOutput) {
  Module factory = LoadArtifact(kMlp);
  auto want = Reference(factory, kThreads, 1);
  Module gmod = factory.GetFunction("default")(kCPU);
  PackedFunc set_input = gmod.GetFunction("set_input");
  PackedFunc run = gmod.GetFunction("run");
  PackedFunc get_output = gmod.GetFunction("get_output");
  std::atomic<int> torn{0}, refused{0}, other_errors{0}, outputs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      NDArray x = Floats({1, 8}, MlpInput(t, 0));
      NDArray y = NDArray::Empty(ShapeTuple({1, 10}), kFloat32, kCPU);
      for (int i = 0; i < 300; ++i) {
        try {
          set_input("data", x);
          run();
          get_output(0, y);
        } catch (const Error& e) {
          if (std::strstr(e.what(), "called from two threads at once") != nullptr) {
            ++refused;
          } else {
            ++other_errors;
          }
          continue;
        }
        ++outputs;
        std::vector<float> got = Values(y);
        bool valid = false;
        for (const auto& per_thread : want) valid = valid || got == per_thread[0];
        if (!valid) ++torn;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(other_errors.load(), 0);
  EXPECT_GT(outputs.load(), 0);
  // Whether calls overlap depends on scheduling; ACallOverlapping... proves the refusal itself.
  std::printf("one executor, %d threads: %d sequences completed, %d calls refused\n", kThreads,
              outputs.load(), refused.load());
}

}  // namespace
