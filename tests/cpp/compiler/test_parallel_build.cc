// The kernel library build on several threads: the same bytes for every --jobs, and
// structurally identical groups sharing one function.
#include <cmath>
#include <fstream>
#include <iterator>

#include "kernel_test_util.h"

namespace ember::compiler {
namespace {

using testing::Call;
using testing::HostArray;
using testing::KernelGraph;
using testing::Library;

// Add then Sigmoid over [rows][64]; input names come from `prefix`, so two graphs of the same
// rows differ only in names.
KernelGraph AddSigmoid(const std::string& prefix, int64_t rows) {
  KernelGraph kg;
  int a = kg.Input(prefix + "_a", {rows, 64});
  int b = kg.Input(prefix + "_b", {64});
  int s = kg.Add("Add", {a, b}, {TensorType{{rows, 64}, kFloat32}})[0];
  kg.Add("Sigmoid", {s}, {TensorType{{rows, 64}, kFloat32}});
  return kg;
}

FusedGroup WholeGroup(const KernelGraph& kg, const std::string& name) {
  return kg.Group(name, {kg.graph.nodes().back().outputs[0]});
}

std::string ReadBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string BuildBytes(const std::vector<FusedGroup>& groups, int jobs, bool system_lib) {
  std::string path = "/tmp/ember_parallel_build_" + std::to_string(getpid()) + "_" +
                     std::to_string(jobs) + (system_lib ? ".o" : ".so");
  BuildOptions opts;
  opts.jobs = jobs;
  opts.system_lib = system_lib;
  BuildKernelLibrary(groups, Target::Host(), path, opts);
  std::string bytes = ReadBytes(path);
  std::remove(path.c_str());
  return bytes;
}

TEST(ParallelBuild, LibraryBytesDoNotDependOnJobs) {
  KernelGraph k4 = AddSigmoid("p", 4), k8 = AddSigmoid("q", 8), k16 = AddSigmoid("r", 16);
  std::vector<FusedGroup> groups = {WholeGroup(k4, "f4"), WholeGroup(k8, "f8"),
                                    WholeGroup(k16, "f16")};
  for (bool system_lib : {false, true}) {
    std::string one = BuildBytes(groups, 1, system_lib);
    ASSERT_FALSE(one.empty());
    EXPECT_EQ(BuildBytes(groups, 2, system_lib), one) << "system_lib " << system_lib;
    EXPECT_EQ(BuildBytes(groups, 5, system_lib), one) << "system_lib " << system_lib;
  }
}

TEST(ParallelBuild, IdenticalGroupsShareOneFunctionUnderEveryName) {
  KernelGraph first = AddSigmoid("first", 4), second = AddSigmoid("second", 4);
  KernelGraph other = AddSigmoid("other", 8);
  Library lib(
      {WholeGroup(first, "f_first"), WholeGroup(second, "f_second"), WholeGroup(other, "f_other")});
  ASSERT_NE(lib.Get("f_first"), nullptr);
  ASSERT_NE(lib.Get("f_second"), nullptr);
  ASSERT_NE(lib.Get("f_other"), nullptr);
  EXPECT_EQ(lib.Symbol("f_first"), lib.Symbol("f_second"));
  EXPECT_NE(lib.Symbol("f_first"), lib.Symbol("f_other"));
  for (const char* name : {"f_second", "f_other"}) {
    const int64_t rows = std::string(name) == "f_other" ? 8 : 4;
    HostArray a({rows, 64}, kFloat32), b({64}, kFloat32), y({rows, 64}, kFloat32);
    a.FillRandom(1);
    b.FillRandom(2);
    ASSERT_EQ(Call(lib.Get(name), {&a, &b, &y}), 0) << name;
    for (int64_t i = 0; i < y.size(); ++i) {
      float want = 1.f / (1.f + std::exp(-(a.data<float>()[i] + b.data<float>()[i % 64])));
      ASSERT_NEAR(y.data<float>()[i], want, 1e-5f) << name << " element " << i;
    }
  }
}

TEST(ParallelBuild, SystemLibRegistersSharedFunctionsUnderEveryName) {
  KernelGraph first = AddSigmoid("first", 4), second = AddSigmoid("second", 4);
  std::string bytes =
      BuildBytes({WholeGroup(first, "syslib_first"), WholeGroup(second, "syslib_second")}, 2, true);
  EXPECT_NE(bytes.find("syslib_first"), std::string::npos);
  EXPECT_NE(bytes.find("syslib_second"), std::string::npos);
  EXPECT_NE(bytes.find(".init_array"), std::string::npos);
}

}  // namespace
}  // namespace ember::compiler
