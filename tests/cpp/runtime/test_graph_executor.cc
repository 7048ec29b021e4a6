// Graph executor, factory and artifact loading, on test artifacts built from hand-written graph
// JSON and C kernels (tests/cpp/runtime/artifacts).
#include <ember/runtime/device_api.h>
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>
#include <gtest/gtest.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "../../../runtime/graph_executor/graph_json.h"
#include "ndarray_test_util.h"
#include "scoped_chdir.h"

namespace {

using ember::runtime::test_util::Floats;
using ember::runtime::test_util::Values;

using namespace ember::runtime;

const std::string kArtifacts = EMBER_GRAPH_ARTIFACTS;
const std::string kMlp = kArtifacts + "/mlp";
const std::string kSplit = kArtifacts + "/split";

std::vector<float> MlpInput() {
  std::vector<float> x(8);
  for (int i = 0; i < 8; ++i) x[i] = -1.0f + 0.25f * static_cast<float>(i);
  return x;
}

// The mlp model computed by hand from the factory's params: dense -> add -> relu -> dense.
std::vector<float> MlpReference(const Module& factory, const std::vector<float>& x) {
  Map<String, NDArray> params = factory.GetFunction("get_params")();
  std::vector<float> w0 = Values(params.at(String("w0")));
  std::vector<float> b0 = Values(params.at(String("b0")));
  std::vector<float> w1 = Values(params.at(String("w1")));
  std::vector<float> h(16), y(10);
  for (int j = 0; j < 16; ++j) {
    float acc = 0;
    for (int k = 0; k < 8; ++k) acc += x[k] * w0[j * 8 + k];
    h[j] = std::max(acc + b0[j], 0.0f);
  }
  for (int j = 0; j < 10; ++j) {
    float acc = 0;
    for (int k = 0; k < 16; ++k) acc += h[k] * w1[j * 16 + k];
    y[j] = acc;
  }
  return y;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

// Expects \p f to throw an Error whose message contains every part.
template <typename F>
void ExpectError(F&& f, const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << parts[0];
  } catch (const Error& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "expected \"" << p << "\" in: " << e.what();
    }
  }
}

Module LoadMlpExecutor() { return LoadArtifact(kMlp).GetFunction("default")(kCPU); }

TEST(GraphExecutor, RunsTheThreeFileArtifact) {
  Module factory = LoadArtifact(kMlp);
  Module gmod = factory.GetFunction("default")(kCPU);
  EXPECT_STREQ(gmod->type_key(), "GraphExecutor");
  EXPECT_EQ(static_cast<int>(gmod.GetFunction("get_num_inputs")()), 4);  // data + 3 params
  EXPECT_EQ(static_cast<int>(gmod.GetFunction("get_num_outputs")()), 1);
  EXPECT_EQ(static_cast<int>(gmod.GetFunction("get_input_index")("w1")), 3);
  EXPECT_EQ(static_cast<int>(gmod.GetFunction("get_input_index")("nope")), -1);
  gmod.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  gmod.GetFunction("run")();
  NDArray out = gmod.GetFunction("get_output")(0);
  EXPECT_EQ(out.Shape(), ShapeTuple({1, 10}));
  ExpectNear(Values(out), MlpReference(factory, MlpInput()));
}

TEST(GraphExecutor, RunsTheSingleFileArtifact) {
  Module factory = LoadArtifact(kArtifacts + "/mlp_single.so");
  EXPECT_STREQ(factory->type_key(), "GraphExecutorFactory");
  Module gmod = factory.GetFunction("default")(kCPU);
  gmod.GetFunction("set_input")(0, Floats({1, 8}, MlpInput()));
  gmod.GetFunction("run")();
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), MlpReference(factory, MlpInput()));
  // Same graph and params as the directory form.
  std::string a = factory.GetFunction("get_graph_json")();
  std::string b = LoadArtifact(kMlp).GetFunction("get_graph_json")();
  EXPECT_EQ(a, b);
}

TEST(GraphExecutor, LoadsABareFileNameFromTheCurrentDirectory) {
  ember::runtime::test_util::ScopedChdir in_artifacts(kArtifacts);
  Module factory = LoadArtifact("mlp_single.so");
  EXPECT_STREQ(factory->type_key(), "GraphExecutorFactory");
  EXPECT_STREQ(LoadArtifact("mlp")->type_key(), "GraphExecutorFactory");
}

TEST(GraphExecutor, InputInfoListsInputsButNotParams) {
  Module gmod = LoadMlpExecutor();
  Map<String, ObjectRef> info = gmod.GetFunction("get_input_info")();
  Map<String, ShapeTuple> shapes(ObjectRefInternal::Data(info.at(String("shape"))));
  Map<String, String> dtypes(ObjectRefInternal::Data(info.at(String("dtype"))));
  ASSERT_EQ(shapes.size(), 1u);
  EXPECT_EQ(shapes.at(String("data")), ShapeTuple({1, 8}));
  EXPECT_EQ(dtypes.at(String("data")).str(), "float32");
}

TEST(GraphExecutor, StorageSharingTwoTensorsOneStorageId) {
  // In mlp, dense0 (entry 2) and relu0 (entry 5) share storage id 2: after run() the pool holds
  // relu0's result, and dense0's view shows the same bytes.
  Module gmod = LoadMlpExecutor();
  Graph g = ParseGraphJson(ReadFileToString(kMlp + "/graph.json"));
  ASSERT_EQ(g.storage_id[2], g.storage_id[5]);
  gmod.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  gmod.GetFunction("run")();
  // The result still matches the reference, so the reuse did not clobber a live tensor.
  Module factory = LoadArtifact(kMlp);
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), MlpReference(factory, MlpInput()));
}

TEST(GraphExecutor, StoragePlanWritingIntoAParamIsRefusedAtLoad) {
  // dense1's output in w0's storage would corrupt w0 for the next run (and here, this run).
  std::string json = ReadFileToString(kMlp + "/graph.json");
  const std::string plan = "[0, 1, 2, 3, 4, 2, 5, 6]";
  ASSERT_NE(json.find(plan), std::string::npos);
  json.replace(json.find(plan), plan.size(), "[0, 1, 2, 3, 4, 2, 5, 1]");
  Module lib = Module::LoadFromFile(kMlp + "/lib.so");
  ExpectError([&] { CreateGraphExecutor(json, lib, {kCPU}); },
              {"entry 7 (output of node 7 \"dense1\") storage 1, which entry 1 (input/param node 1 "
               "\"w0\") still needs then"});
}

TEST(GraphExecutor, AStoragePlanLargerThanTheMachinesMemoryIsRefusedBeforeAllocating) {
  // Two values of 0.6x what a process can hold each (the machine's memory; on armhf the address
  // space): either alone passes the allocator's check, and touching both at load would have the
  // OS kill the process instead of an error.
  const uint64_t elements = ProcessMemoryBytes() / 4 / 10 * 6;
  const std::string big = "[1, " + std::to_string(elements) + "]";
  std::string json = ReadFileToString(kMlp + "/graph.json");
  const std::string shapes = "[1, 16], [1, 16], [1, 16], [1, 16]";
  ASSERT_NE(json.find(shapes), std::string::npos);
  json.replace(json.find(shapes), shapes.size(), "[1, 16], " + big + ", " + big + ", [1, 16]");
  Module lib = Module::LoadFromFile(kMlp + "/lib.so");
  ExpectError([&] { CreateGraphExecutor(json, lib, {kCPU}); },
              {"graph.json: the graph's values need", "MB of storage, more than the",
               "MB a process can hold here", "the largest is node \"b0\"'s output " + big});
}

TEST(GraphExecutor, AnInputNeverSetHoldsZeros) {
#ifdef __GLIBC__
  // glibc fills new allocations with 0x7f bytes (floats of 3.4e38) from here on: storage no longer
  // starts out zero by luck.
  mallopt(M_PERTURB, 0x80);
#endif
  Module gmod = LoadMlpExecutor();
#ifdef __GLIBC__
  mallopt(M_PERTURB, 0);
#endif
  Module factory = LoadArtifact(kMlp);
  std::vector<float> want = MlpReference(factory, std::vector<float>(8, 0.0f));
  for (int run = 0; run < 2; ++run) {
    gmod.GetFunction("run")();
    ExpectNear(Values(gmod.GetFunction("get_output")(0)), want);
  }
}

TEST(GraphExecutor, ZeroCopyInputAndOutput) {
  Module factory = LoadArtifact(kMlp);
  Module gmod = factory.GetFunction("default")(kCPU);
  NDArray in = Floats({1, 8}, MlpInput());
  NDArray out = NDArray::Empty(ShapeTuple({1, 10}), kFloat32, kCPU);
  gmod.GetFunction("set_input_zero_copy")("data", in);
  gmod.GetFunction("set_output_zero_copy")(0, out);
  gmod.GetFunction("run")();
  ExpectNear(Values(out), MlpReference(factory, MlpInput()));
  // The executor reads the caller's buffer in place: change it and run again.
  std::vector<float> x2 = MlpInput();
  for (float& v : x2) v = -v;
  in.CopyFromBytes(x2.data(), x2.size() * sizeof(float));
  gmod.GetFunction("run")();
  ExpectNear(Values(out), MlpReference(factory, x2));
  // A copying set_input afterwards takes the input back to the executor's own memory.
  gmod.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  in.CopyFromBytes(x2.data(), x2.size() * sizeof(float));
  gmod.GetFunction("run")();
  ExpectNear(Values(out), MlpReference(factory, MlpInput()));
}

TEST(GraphExecutor, ZeroCopyRefusesMisalignedOrMismatched) {
  Module gmod = LoadMlpExecutor();
  NDArray big = NDArray::Empty(ShapeTuple({1, 16}), kFloat32, kCPU);
  NDArray view = big.CreateView(ShapeTuple({1, 8}), kFloat32);
  DLTensor shifted = *view.operator->();
  shifted.byte_offset = 4;
  ExpectError([&] { gmod.GetFunction("set_input_zero_copy")("data", &shifted); },
              {"set_input_zero_copy \"data\"", "64-byte aligned"});
  ExpectError([&] { gmod.GetFunction("set_output_zero_copy")(0, big); },
              {"set_output_zero_copy 0", "expected float32[1, 10], got float32[1, 16]"});
}

TEST(GraphExecutor, MultiOutputGraphWithCopyAndNop) {
  Module gmod = LoadArtifact(kSplit).GetFunction("default")(kCPU);
  EXPECT_EQ(static_cast<int>(gmod.GetFunction("get_num_outputs")()), 3);
  gmod.GetFunction("set_input")("x", Floats({2, 4}, {1, -2, 3, -4, -5, 6, -7, 8}));
  gmod.GetFunction("run")();
  EXPECT_EQ(Values(gmod.GetFunction("get_output")(0)), (std::vector<float>{1, -2, 3, -4}));
  EXPECT_EQ(Values(gmod.GetFunction("get_output")(1)), (std::vector<float>{0, 6, 0, 8}));
  EXPECT_EQ(Values(gmod.GetFunction("get_output")(2)), (std::vector<float>{1, -2, 3, -4}));
  NDArray dst = NDArray::Empty(ShapeTuple({1, 4}), kFloat32, kCPU);
  gmod.GetFunction("get_output")(1, dst);
  EXPECT_EQ(Values(dst), (std::vector<float>{0, 6, 0, 8}));
}

TEST(GraphExecutor, LoadParamsAndShareParams) {
  Module factory = LoadArtifact(kMlp);
  std::string graph_json = factory.GetFunction("get_graph_json")();
  std::string params_bytes = ReadFileToString(kMlp + "/params.bin");
  Module lib = Module::LoadFromFile(kMlp + "/lib.so");
  // A bare executor gets its params from bytes...
  Module a = CreateGraphExecutor(graph_json, lib, {kCPU});
  a.GetFunction("load_params")(TVMByteArray{params_bytes.data(), params_bytes.size()});
  a.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  a.GetFunction("run")();
  ExpectNear(Values(a.GetFunction("get_output")(0)), MlpReference(factory, MlpInput()));
  // ...and a second one shares them without a copy.
  Module b = CreateGraphExecutor(graph_json, lib, {kCPU});
  b.GetFunction("share_params")(a, TVMByteArray{params_bytes.data(), params_bytes.size()});
  NDArray wa = a.GetFunction("get_input")("w0");
  NDArray wb = b.GetFunction("get_input")("w0");
  EXPECT_EQ(wa->data, wb->data);
  b.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  b.GetFunction("run")();
  ExpectNear(Values(b.GetFunction("get_output")(0)), MlpReference(factory, MlpInput()));
}

TEST(GraphExecutor, FactoryExecutorsShareParamsReadOnly) {
  Module factory = LoadArtifact(kMlp);
  Module a = factory.GetFunction("default")(kCPU);
  Module b = factory.GetFunction("default")(kCPU);
  Map<String, NDArray> params = factory.GetFunction("get_params")();
  NDArray w0 = params.at(String("w0"));
  NDArray wa = a.GetFunction("get_input")("w0");
  NDArray wb = b.GetFunction("get_input")("w0");
  EXPECT_EQ(wa->data, w0->data) << "executor copied a param it could share";
  EXPECT_EQ(wb->data, w0->data);
  // Writing a param through one executor gives it a private copy; the others keep the original.
  std::vector<float> zeros(16 * 8, 0.0f);
  a.GetFunction("set_input")("w0", Floats({16, 8}, zeros));
  EXPECT_EQ(Values(w0), Values(b.GetFunction("get_input")("w0")));
  EXPECT_NE(Values(w0), zeros);
  a.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  a.GetFunction("run")();
  b.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  b.GetFunction("run")();
  ExpectNear(Values(b.GetFunction("get_output")(0)), MlpReference(factory, MlpInput()));
}

TEST(GraphExecutor, FactoryFunctions) {
  Module factory = LoadArtifact(kMlp);
  Map<String, NDArray> params = factory.GetFunction("get_graph_params")();
  EXPECT_EQ(params.size(), 3u);
  Module bare = factory.GetFunction("remove_params")();
  Map<String, NDArray> none = bare.GetFunction("get_params")();
  EXPECT_EQ(none.size(), 0u);
  // Without params the executor still builds; the params can be loaded afterwards.
  Module gmod = bare.GetFunction("default")(kCPU);
  std::string bytes = ReadFileToString(kMlp + "/params.bin");
  gmod.GetFunction("load_params")(TVMByteArray{bytes.data(), bytes.size()});
  gmod.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  gmod.GetFunction("run")();
  ExpectNear(Values(gmod.GetFunction("get_output")(0)), MlpReference(factory, MlpInput()));
  Module dbg = factory.GetFunction("debug_create")("default", kCPU);
  EXPECT_STREQ(dbg->type_key(), "GraphExecutor");
  EXPECT_TRUE(Registry::Get("runtime.load_artifact") != nullptr);
}

TEST(GraphExecutor, BlobRoundTripsThroughTheLoader) {
  Module factory = LoadArtifact(kMlp);
  std::string blob = SerializeFactoryBlob(factory);
  uint64_t len = 0;
  std::memcpy(&len, blob.data(), sizeof(len));
  EXPECT_EQ(len, blob.size() - sizeof(len));
  // The payload starts with the entry count (3) and the factory's type key.
  uint64_t count = 0;
  std::memcpy(&count, blob.data() + 8, sizeof(count));
  EXPECT_EQ(count, 3u);
  EXPECT_EQ(blob.substr(24, 20), "GraphExecutorFactory");
  EXPECT_NE(blob.find("_import_tree"), std::string::npos);
}

TEST(GraphExecutor, ErrorsNameThings) {
  Module gmod = LoadMlpExecutor();
  ExpectError(
      [&] {
        gmod.GetFunction("set_input")("img", Floats({1, 8}, MlpInput()));
      },
      {"set_input: no input named \"img\"; inputs are: data"});
  ExpectError([&] { gmod.GetFunction("set_input")("data", Floats({8}, MlpInput())); },
              {"set_input \"data\": expected float32[1, 8], got float32[8]"});
  NDArray ints = NDArray::Empty(ShapeTuple({1, 8}), kInt32, kCPU);
  ExpectError([&] { gmod.GetFunction("set_input")("data", ints); },
              {"expected float32[1, 8], got int32[1, 8]"});
  ExpectError([&] { gmod.GetFunction("set_input")(9, ints); }, {"input index 9 is out of range"});
  ExpectError([&] { gmod.GetFunction("get_output")(1); },
              {"get_output: output index 1 is out of range; the graph has 1 outputs"});

  std::string json = ReadFileToString(kMlp + "/graph.json");
  Module lib = Module::LoadFromFile(kMlp + "/lib.so");
  std::string missing = json;
  missing.replace(missing.find("\"relu\""), 6, "\"relu_v2\"");
  ExpectError([&] { CreateGraphExecutor(missing, lib, {kCPU}); },
              {"node 5 (\"relu0\") calls \"relu_v2\"", "does not export"});
  std::string failing = json;
  failing.replace(failing.find("\"relu\""), 6, "\"fail\"");
  Module bad = CreateGraphExecutor(failing, lib, {kCPU});
  ExpectError([&] { bad.GetFunction("run")(); },
              {"run: node 5 (\"relu0\", kernel \"fail\") failed", "deliberate kernel failure"});
  std::string bad_dtype = json;
  bad_dtype.replace(bad_dtype.find("\"float32\""), 9, "\"floaty\"");
  ExpectError([&] { CreateGraphExecutor(bad_dtype, lib, {kCPU}); }, {"attrs.dltype[0]", "floaty"});
  ExpectError([&] { CreateGraphExecutor(json, lib, {DLDevice{kDLCUDA, 0}}); }, {"cpu only"});
  ExpectError([&] { LoadArtifact(kArtifacts + "/no_such_dir/"); }, {"does not exist"});
  ExpectError([&] { LoadArtifact(kArtifacts + "/graph_kernels.so"); },
              {"holds kernels but no graph"});
  ExpectError([&] { LoadArtifact(kArtifacts); }, {"graph.json is missing"});
}

TEST(GraphExecutor, EightThreadsEachWithItsOwnExecutor) {
  Module factory = LoadArtifact(kMlp);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Module gmod = factory.GetFunction("default")(kCPU);
      std::vector<float> x = MlpInput();
      for (float& v : x) v *= static_cast<float>(t + 1);
      std::vector<float> want = MlpReference(factory, x);
      bool good = true;
      for (int i = 0; i < 50; ++i) {
        gmod.GetFunction("set_input")("data", Floats({1, 8}, x));
        gmod.GetFunction("run")();
        std::vector<float> got = Values(gmod.GetFunction("get_output")(0));
        for (size_t k = 0; k < got.size(); ++k) good = good && std::fabs(got[k] - want[k]) < 1e-4;
      }
      if (good) ++ok;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 8);
}

// A field of /proc/self/status in KiB ("VmRSS:", "VmHWM:").
long StatusKb(const std::string& key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  }
  return -1;
}

TEST(GraphExecutor, LoadingNeverHoldsParamsTwiceAndExecutorsShareThem) {
  // big: one 4096x2048 float32 param (32 MiB), input 1x2048, output 1x4096.
  const double params_kb = 4096.0 * 2048 * 4 / 1024;
  const double activations_kb = (2048.0 + 4096.0) * 4 / 1024;
  const double slack_kb = 1024;  // executor bookkeeping, malloc arenas, library code pages
  for (const std::string& path : {kArtifacts + "/big", kArtifacts + "/big_single.so"}) {
    std::ofstream("/proc/self/clear_refs") << "5";  // resets VmHWM to the current RSS
    long base = StatusKb("VmRSS:");
    if (StatusKb("VmHWM:") > base + 512) GTEST_SKIP() << "cannot reset the peak RSS here";
    Module factory = LoadArtifact(path);
    std::vector<Module> execs;
    for (int i = 0; i < 4; ++i) {
      execs.push_back(factory.GetFunction("default")(kCPU));
      execs.back().GetFunction("run")();
    }
    double peak = static_cast<double>(StatusKb("VmHWM:") - base);
    double now = static_cast<double>(StatusKb("VmRSS:") - base);
    std::cout << path << ": params " << params_kb << " KiB; peak while loading and running 4 "
              << "executors +" << peak << " KiB (" << peak / params_kb << "x params); resident "
              << "with 4 executors +" << now << " KiB\n";
    EXPECT_LT(peak, 1.2 * params_kb + 4 * activations_kb) << path;
    EXPECT_LT(now, params_kb + 4 * activations_kb + slack_kb) << path << ": params held twice?";
  }
}

TEST(GraphExecutor, ProfilerAndTimeEvaluator) {
  Module gmod = LoadMlpExecutor();
  gmod.GetFunction("set_input")("data", Floats({1, 8}, MlpInput()));
  ProfileReport report = ProfileExecutor(gmod, 5, 2, 0);
  ASSERT_EQ(report.nodes.size(), 4u);  // four operators
  for (size_t i = 1; i < report.nodes.size(); ++i) {
    EXPECT_GE(report.nodes[i - 1].mean_us, report.nodes[i].mean_us) << "not sorted by time";
  }
  std::string table = gmod.GetFunction("profile")(5, 2, 0);
  EXPECT_NE(table.find("dense1"), std::string::npos) << table;
  EXPECT_NE(table.find("[1, 10]"), std::string::npos) << table;
  EXPECT_NE(table.find("Share(%)"), std::string::npos) << table;
  std::string json = gmod.GetFunction("profile_json")(5, 2, 0);
  EXPECT_EQ(json.rfind("{\"total_us\": ", 0), 0u) << json;
  EXPECT_NE(json.find("\"func_name\": \"relu\""), std::string::npos) << json;
  std::string per_node = gmod.GetFunction("run_individual")(5, 2, 0);
  EXPECT_EQ(per_node.size(), 8 * sizeof(double));  // one per graph node

  PackedFunc timed = TimeEvaluator(gmod.GetFunction("run"), kCPU, 3, 4, 0);
  std::string bytes = timed();
  ASSERT_EQ(bytes.size(), 4 * sizeof(double));
  std::vector<double> t(4);
  std::memcpy(t.data(), bytes.data(), bytes.size());
  for (double s : t) EXPECT_GT(s, 0.0);
  // min_repeat_ms grows the number of calls until one repeat lasts that long.
  int calls = 0;
  PackedFunc counter([&](TVMArgs, TVMRetValue*) { ++calls; });
  TVMValue v;
  int code;
  TimeEvaluate(counter, TVMArgs(&v, &code, 0), 1, 1, 5);
  EXPECT_GT(calls, 2);
  ExpectError([&] { TimeEvaluator(counter, kCPU, 0, 1, 0); }, {"number and repeat"});
}

}  // namespace
