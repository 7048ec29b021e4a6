// Helpers for kernel-side tests: build one-node graphs, compile them to a lib.so for the host,
// dlopen it and call the packed functions directly with DLTensors.
#ifndef EMBER_TESTS_CPP_COMPILER_KERNEL_TEST_UTIL_H_
#define EMBER_TESTS_CPP_COMPILER_KERNEL_TEST_UTIL_H_

#include <dlfcn.h>
#include <ember/compiler/codegen.h>
#include <ember/compiler/driver.h>
#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/graph.h>
#include <ember/compiler/target.h>
#include <ember/runtime/c_runtime_api.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../../../compiler/schedule/table_strategy.h"
#include "../../../compiler/schedule/tuning.h"

namespace ember::compiler::testing {

/*! \brief The kernel choice a compile for `target` makes, with the knobs tests set in the
 * environment (EMBER_SCHEDULE, EMBER_DISABLE_SCHEDULES, EMBER_KEEP_NCHW, EMBER_NO_WINOGRAD). */
inline schedule::TableStrategy StrategyFor(const Target& target) {
  return schedule::TableStrategy(target, StrategyOptionsFromEnvironment());
}

/*! \brief Lowering for the host with the host's kernel choice, collecting the workloads tunable
 * schedules describe (the tuner's first step) in `tasks`. */
struct HostTuning {
  Target host = Target::Host();
  schedule::TableStrategy strategy = StrategyFor(host);
  std::vector<schedule::TuningTask> tasks;

  lower::ScheduleOptions Options() {
    lower::ScheduleOptions so;
    so.target = &host;
    so.scheduler = &strategy;
    so.tuning_tasks = &tasks;
    return so;
  }
};

/*! \brief opts with the scheduler of StrategyFor(target) when it names none; `strategy` keeps
 * it alive. */
inline BuildOptions WithScheduler(BuildOptions opts, const schedule::TableStrategy& strategy) {
  if (opts.scheduler == nullptr) opts.scheduler = &strategy;
  return opts;
}

/*! \brief BuildKernelLibrary with the kernel choice of StrategyFor(target) (unless opts names
 * a scheduler). */
inline void BuildWithStrategy(const std::vector<FusedGroup>& groups, const Target& target,
                              const std::string& path, const BuildOptions& opts = BuildOptions()) {
  const schedule::TableStrategy strategy = StrategyFor(target);
  BuildKernelLibrary(groups, target, path, WithScheduler(opts, strategy));
}

using PackedCFunc = int32_t (*)(TVMValue*, int32_t*, int32_t, TVMValue*, int32_t*, void*);

/*! \brief A graph with one or more nodes and a group over all of them. */
struct KernelGraph {
  Graph graph;
  std::vector<int> inputs, outputs;

  int Input(const std::string& name, std::vector<int64_t> shape, DLDataType dt = kFloat32) {
    int id = graph.AddValue(name, TensorType{std::move(shape), dt});
    graph.inputs().push_back(id);
    inputs.push_back(id);
    return id;
  }
  /*! \brief Adds a node; returns its output value ids. */
  std::vector<int> Add(const std::string& op, std::vector<int> ins,
                       std::vector<TensorType> out_types, AttrMap attrs = {}) {
    Node n;
    n.op = op;
    n.name = op + "_" + std::to_string(graph.nodes().size());
    n.attrs = std::move(attrs);
    n.inputs = std::move(ins);
    std::vector<int> outs;
    for (size_t k = 0; k < out_types.size(); ++k) {
      outs.push_back(graph.AddValue(n.name + "_y" + std::to_string(k), out_types[k]));
    }
    n.outputs = outs;
    graph.nodes().push_back(n);
    return outs;
  }
  FusedGroup Group(const std::string& name, std::vector<int> outs) const {
    FusedGroup g;
    g.func_name = name;
    g.graph = &graph;
    for (auto& n : graph.nodes()) g.nodes.push_back(&n);
    g.inputs = inputs;
    g.outputs = std::move(outs);
    return g;
  }
};

/*! \brief A library compiled for the host (or a target the host runs) in a temp dir, unloaded
 * and removed on destruction. */
class Library {
 public:
  Library(const std::vector<FusedGroup>& groups, const BuildOptions& opts = BuildOptions(),
          const Target& target = Target::Host()) {
    char tmpl[] = "/tmp/ember_kernel_test_XXXXXX";
    dir_ = mkdtemp(tmpl);
    path_ = dir_ + "/lib.so";
    BuildWithStrategy(groups, target, path_, opts);
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) ADD_FAILURE() << "dlopen: " << dlerror();
  }
  ~Library() {
    if (handle_) dlclose(handle_);
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  PackedCFunc Get(const std::string& name) const {
    return handle_ ? reinterpret_cast<PackedCFunc>(dlsym(handle_, name.c_str())) : nullptr;
  }
  void* Symbol(const std::string& name) const {
    return handle_ ? dlsym(handle_, name.c_str()) : nullptr;
  }
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  void* handle_ = nullptr;
};

/*! \brief Host tensor of any dtype with its DLTensor view. */
struct HostArray {
  std::vector<int64_t> shape;
  DLDataType dtype;
  std::vector<uint8_t> bytes;
  DLTensor tensor;

  HostArray(std::vector<int64_t> s, DLDataType dt) : shape(std::move(s)), dtype(dt) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    bytes.assign(static_cast<size_t>(n) * ((dt.bits + 7) / 8), 0);
    tensor = DLTensor{bytes.data(),
                      DLDevice{kDLCPU, 0},
                      static_cast<int32_t>(shape.size()),
                      dt,
                      shape.data(),
                      nullptr,
                      0};
  }
  // Not copyable: the DLTensor points at this object's own bytes.
  HostArray(const HostArray&) = delete;
  HostArray& operator=(const HostArray&) = delete;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  template <typename T>
  T* data() {
    return reinterpret_cast<T*>(bytes.data());
  }
  void FillRandom(uint32_t seed, float lo = -1.f, float hi = 1.f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(lo, hi);
    for (int64_t i = 0; i < size(); ++i) data<float>()[i] = dist(rng);
  }
};

/*! \brief Calls f(args...) with DLTensor handles; returns its status. */
inline int Call(PackedCFunc f, std::vector<HostArray*> arrays) {
  std::vector<TVMValue> values(arrays.size());
  std::vector<int32_t> codes(arrays.size(), kTVMDLTensorHandle);
  for (size_t i = 0; i < arrays.size(); ++i) values[i].v_handle = &arrays[i]->tensor;
  TVMValue ret;
  int32_t ret_code = 0;
  return f(values.data(), codes.data(), static_cast<int32_t>(arrays.size()), &ret, &ret_code,
           nullptr);
}

/*! \brief Sets (or, given nullptr, unsets) an environment variable for its scope. */
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ScopedEnv(const char* name, const std::string& value) : ScopedEnv(name, value.c_str()) {}
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

/*! \brief The whole text of a file (empty when it cannot be read). */
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/*! \brief Compiles one group named "conv" over every node of kg with output y for target; each
 * (file, text) pair's text receives the build's dump file (kernels.loop.txt: the loop IR, to check
 * which schedule took it; kernels.ll / kernels.opt.ll: the LLVM IR before / after optimisation).
 * A library for another CPU than the host's is loaded but must not be called.
 */
inline std::unique_ptr<Library> BuildKernelWithDumps(
    const KernelGraph& kg, int y, const std::vector<std::pair<std::string, std::string*>>& files,
    const Target& target = Target::Host()) {
  char tmpl[] = "/tmp/ember_schedule_test_XXXXXX";
  std::string dump = mkdtemp(tmpl);
  BuildOptions bo;
  bo.dump_dir = dump;
  auto lib = std::make_unique<Library>(std::vector<FusedGroup>{kg.Group("conv", {y})}, bo, target);
  for (const auto& [file, text] : files) *text = ReadFile(dump + "/" + file);
  std::filesystem::remove_all(dump);
  return lib;
}

/*! \brief BuildKernelWithDumps with one dump file. */
inline std::unique_ptr<Library> BuildKernelWithDump(const KernelGraph& kg, int y,
                                                    const std::string& file, std::string* text,
                                                    const Target& target = Target::Host()) {
  return BuildKernelWithDumps(kg, y, {{file, text}}, target);
}

/*! \brief BuildKernelWithDump with the loop IR. */
inline std::unique_ptr<Library> BuildKernelWithLoops(const KernelGraph& kg, int y,
                                                     std::string* loops) {
  return BuildKernelWithDump(kg, y, "kernels.loop.txt", loops);
}

/*! \brief Conv geometry of the reference below (square kernel, symmetric pads). */
struct ConvDims {
  int64_t c, h, w, oc, k, stride, pad, group;
  int64_t dilation = 1;
};

/*! \brief Direct conv of NCHW x with OIHW w at output (n, o, i, j), zero padding, no bias. */
inline double ReferenceConvAt(HostArray& x, HostArray& w, const ConvDims& d, int64_t n, int64_t o,
                              int64_t i, int64_t j) {
  const int64_t icg = d.c / d.group, g = o / (d.oc / d.group);
  double acc = 0.0;
  for (int64_t ic = 0; ic < icg; ++ic)
    for (int64_t kh = 0; kh < d.k; ++kh)
      for (int64_t kw = 0; kw < d.k; ++kw) {
        const int64_t ih = i * d.stride + kh * d.dilation - d.pad;
        const int64_t iw = j * d.stride + kw * d.dilation - d.pad;
        if (ih < 0 || ih >= d.h || iw < 0 || iw >= d.w) continue;
        acc += double{x.data<float>()[((n * d.c + g * icg + ic) * d.h + ih) * d.w + iw]} *
               w.data<float>()[((o * icg + ic) * d.k + kh) * d.k + kw];
      }
  return acc;
}

/*! \brief OIHW weights as PackConvWeights stores them: [O/B][I/X][H][W][X][B] (X = ic_block). */
inline void PackWeightsLikeEmberc(HostArray* w, int64_t block, int64_t ic_block) {
  const int64_t oc = w->shape[0], ic = w->shape[1], taps = w->shape[2] * w->shape[3];
  std::vector<float> src(w->data<float>(), w->data<float>() + w->size());
  for (int64_t o = 0; o < oc; ++o)
    for (int64_t i = 0; i < ic; ++i)
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t outer = ((o / block) * (ic / ic_block) + i / ic_block) * taps + t;
        w->data<float>()[(outer * ic_block + i % ic_block) * block + o % block] =
            src[(o * ic + i) * taps + t];
      }
}

}  // namespace ember::compiler::testing

#endif  // EMBER_TESTS_CPP_COMPILER_KERNEL_TEST_UTIL_H_
