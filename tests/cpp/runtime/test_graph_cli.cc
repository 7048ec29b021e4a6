// ember-run end to end: every flag, its outputs and its errors (runs the built binary).
#include <ember/runtime/graph_executor.h>
#include <ember/runtime/npy.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace ember::runtime;

const std::string kArtifacts = EMBER_GRAPH_ARTIFACTS;
const std::string kMlp = kArtifacts + "/mlp";

struct Result {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs ember-run with \p args (shell words, already quoted where needed), in \p cwd if given.
Result RunCli(const std::string& args, const std::string& cwd = "") {
  std::string dir = ::testing::TempDir() + "ember_cli_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::string err_file = dir + "/stderr.txt";
  std::string cmd = std::string(EMBER_RUN_BINARY) + " " + args + " 2>" + err_file;
  if (!cwd.empty()) cmd = "cd " + cwd + " && " + cmd;
  Result r;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.err = ReadFileToString(err_file);
  return r;
}

std::string OutDir(const std::string& name) {
  std::string d = ::testing::TempDir() + "ember_cli_out_" + std::to_string(::getpid()) + "_" + name;
  std::filesystem::remove_all(d);
  return d;
}

std::vector<float> Floats(const NpyArray& a) {
  std::vector<float> v(a.data.size() / sizeof(float));
  std::memcpy(v.data(), a.data.data(), a.data.size());
  return v;
}

// The mlp output for the artifact's input_data.npy, computed in process.
std::vector<float> Expected() {
  Module gmod = LoadArtifact(kMlp).GetFunction("default")(kCPU);
  NpyArray x = LoadNpy(kMlp + "/input_data.npy");
  NDArray in = NDArray::Empty(ShapeTuple(x.shape), x.dtype, kCPU);
  in.CopyFromBytes(x.data.data(), x.data.size());
  gmod.GetFunction("set_input")("data", in);
  gmod.GetFunction("run")();
  NDArray out = gmod.GetFunction("get_output")(0);
  std::vector<float> v(static_cast<size_t>(out.NumElements()));
  out.CopyToBytes(v.data(), v.size() * sizeof(float));
  return v;
}

TEST(GraphCli, HelpDocumentsEveryFlag) {
  Result r = RunCli("--help");
  EXPECT_EQ(r.status, 0);
  for (const char* flag : {"--input", "--output-dir", "--threads", "--bench", "--warmup",
                           "--repeat", "--number", "--profile", "--trace", "--json", "--seed"}) {
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  }
}

TEST(GraphCli, RunsDirectoryWithInputAndWritesOutputs) {
  std::string out = OutDir("dir");
  Result r = RunCli(kMlp + " --input data=" + kMlp + "/input_data.npy --output-dir " + out +
                    " --threads 1");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");  // every input was given: no note about random data
  NpyArray y = LoadNpy(out + "/output_0.npy");
  EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 10}));
  EXPECT_EQ(Floats(y), Expected());
  EXPECT_NE(r.out.find("1 thread"), std::string::npos) << r.out;
}

TEST(GraphCli, RunsSingleFileArtifactWithMultipleOutputs) {
  std::string out = OutDir("split");
  Result r = RunCli(kArtifacts + "/split_single.so --output-dir " + out);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("input \"x\" not given; using seeded random float32"), std::string::npos);
  for (int i = 0; i < 3; ++i) {
    NpyArray y = LoadNpy(out + "/output_" + std::to_string(i) + ".npy");
    EXPECT_EQ(y.shape, (std::vector<int64_t>{1, 4}));
  }
  EXPECT_EQ(Floats(LoadNpy(out + "/output_0.npy")), Floats(LoadNpy(out + "/output_2.npy")));
}

TEST(GraphCli, RunsABareFileNameFromTheCurrentDirectory) {
  Result r = RunCli("split_single.so --output-dir " + OutDir("bare"), kArtifacts);
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(GraphCli, RandomInputsAreSeeded) {
  std::string a = OutDir("seed_a"), b = OutDir("seed_b"), c = OutDir("seed_c");
  ASSERT_EQ(RunCli(kMlp + " --output-dir " + a).status, 0);
  ASSERT_EQ(RunCli(kMlp + " --seed 0 --output-dir " + b).status, 0);
  ASSERT_EQ(RunCli(kMlp + " --seed 7 --output-dir " + c).status, 0);
  EXPECT_EQ(Floats(LoadNpy(a + "/output_0.npy")), Floats(LoadNpy(b + "/output_0.npy")));
  EXPECT_NE(Floats(LoadNpy(a + "/output_0.npy")), Floats(LoadNpy(c + "/output_0.npy")));
}

TEST(GraphCli, BenchJsonIsOneObjectWithTheContractKeys) {
  Result r = RunCli(kMlp + " --bench --warmup 2 --repeat 7 --number 3 --threads 2 --json " +
                    "--output-dir " + OutDir("bench"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "more than one line: " << r.out;
  for (const char* key : {"\"median_ms\": ", "\"mean_ms\": ", "\"p90_ms\": ", "\"p99_ms\": ",
                          "\"min_ms\": ", "\"max_ms\": ", "\"std_ms\": ", "\"repeat\": 7",
                          "\"number\": 3", "\"threads\": 2", "\"warmup\": 2"}) {
    EXPECT_NE(r.out.find(key), std::string::npos) << key << " in " << r.out;
  }
  // The statistics are ordered as statistics must be.
  auto value = [&](const char* key) {
    size_t at = r.out.find(key);
    return at == std::string::npos ? -1.0 : std::stod(r.out.substr(at + std::strlen(key)));
  };
  EXPECT_LE(value("\"min_ms\": "), value("\"median_ms\": "));
  EXPECT_LE(value("\"median_ms\": "), value("\"p90_ms\": "));
  EXPECT_LE(value("\"p90_ms\": "), value("\"p99_ms\": "));
  EXPECT_LE(value("\"p99_ms\": "), value("\"max_ms\": "));
  // Python's json module accepts it.
  std::string check = "printf '%s' '" + r.out +
                      "' | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); "
                      "assert d[\"repeat\"] == 7' 2>&1";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(GraphCli, BenchTextAndProfile) {
  Result r = RunCli(kMlp + " --bench --repeat 5 --profile --output-dir " + OutDir("prof"));
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* word : {"mean", "median", "p90", "p99", "min", "max", "std", "Share(%)",
                           "dense0", "relu", "[1, 16]", "Total"}) {
    EXPECT_NE(r.out.find(word), std::string::npos) << word << " in " << r.out;
  }
  Result j = RunCli(kMlp + " --profile --json --output-dir " + OutDir("profj"));
  ASSERT_EQ(j.status, 0) << j.err;
  EXPECT_NE(j.out.find("\"profile\": {\"total_us\": "), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"func_name\": \"dense\""), std::string::npos) << j.out;
}

TEST(GraphCli, TraceIsChromeTraceJsonWithOneEventPerOperator) {
  std::string trace = OutDir("trace") + ".json";
  Result r = RunCli(kMlp + " --profile --trace " + trace + " --output-dir " + OutDir("trace_out"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("wrote trace " + trace), std::string::npos) << r.out;
  // Python's json module reads it; one complete event per kernel node of graph.json, each with
  // its kernel, output shape, thread and times.
  std::string check =
      "/usr/bin/python3 -c 'import json, sys\n"
      "events = json.load(open(sys.argv[1]))[\"traceEvents\"]\n"
      "nodes = json.load(open(sys.argv[2]))[\"nodes\"]\n"
      "ops = sorted(n[\"name\"] for n in nodes if n[\"op\"] == \"tvm_op\")\n"
      "assert sorted(e[\"name\"] for e in events) == ops, (events, ops)\n"
      "for e in events:\n"
      "  assert e[\"ph\"] == \"X\" and e[\"dur\"] >= 0 and isinstance(e[\"tid\"], int), e\n"
      "  assert e[\"args\"][\"op\"] and e[\"args\"][\"output\"].startswith(\"[\"), e\n"
      "' " +
      trace + " " + kMlp + "/graph.json 2>&1";
  EXPECT_EQ(std::system(check.c_str()), 0);
}

TEST(GraphCli, ErrorsAreOneLineAndNonZero) {
  struct Case {
    std::string args;
    int status;
    std::string part;
  };
  std::vector<Case> cases = {
      {"", 2, "no artifact given"},
      {kMlp + " --frobnicate", 2, "unknown option --frobnicate"},
      {kMlp + " --threads 0", 2, "--threads expects an integer"},
      {kMlp + " --repeat 5", 2, "only apply with --bench"},
      {kMlp + " --input data", 2, "NAME=FILE.npy"},
      {kMlp + " --input img=x.npy", 1, "no input named \"img\"; inputs are: data"},
      {kMlp + " --input data=/nonexistent.npy", 1, "/nonexistent.npy"},
      {kMlp + " --input data=" + kArtifacts + "/split/input_x.npy", 1,
       "expected float32[1, 8], got float32[2, 4]"},
      {kArtifacts + "/nothing_here", 1, "does not exist"},
      {kArtifacts + "/graph_kernels.so", 1, "no graph"},
      {kMlp + " --output-dir " + kMlp + "/graph.json", 1,
       "--output-dir " + kMlp + "/graph.json: exists and is not a directory"},
      {kMlp + " --trace", 2, "--trace needs a value"},
      {kMlp + " --input data=" + kMlp + "/input_data.npy --trace /nonexistent/t.json", 1,
       "cannot write the trace to /nonexistent/t.json"},
  };
  for (const Case& c : cases) {
    Result r = RunCli(c.args);
    EXPECT_EQ(r.status, c.status) << c.args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("ember-run: ", 0), 0u) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "not one line: " << r.err;
    EXPECT_NE(r.err.find(c.part), std::string::npos) << c.part << " in " << r.err;
  }
}

TEST(GraphCli, CppDeployPrintsTopFive) {
  std::string cmd =
      std::string(EMBER_CPP_DEPLOY_BINARY) + " " + kMlp + " data " + kMlp + "/input_data.npy";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[1024];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ASSERT_EQ(::pclose(p), 0) << out;
  std::vector<float> y = Expected();
  std::vector<int> order(y.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return y[a] > y[b]; });
  std::string want;
  for (int i = 0; i < 5; ++i) {
    char line[96];
    std::snprintf(line, sizeof(line), "%d: index %d score %.6f\n", i + 1, order[i], y[order[i]]);
    want += line;
  }
  EXPECT_EQ(out, want);
}

}  // namespace
