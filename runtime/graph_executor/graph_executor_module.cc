// GraphExecutor as a module: its PackedFunc interface under TVM's names, CreateGraphExecutor and
// the tvm.graph_executor.create global. Each function forwards to the executor's C++ methods
// (graph_executor.cc).
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>

#include <string>
#include <vector>

#include "graph_executor/graph_executor.h"
#include "minimal.h"

namespace ember::runtime {

namespace {
// An input named by a string or given by index.
int InputArg(const GraphExecutor* self, const TVMArgValue& arg, const char* caller) {
  if (arg.type_code() == kTVMStr || arg.type_code() == kTVMObjectHandle) {
    return self->InputIndexOrThrow(arg.operator std::string(), caller);
  }
  return arg.operator int();
}

std::string BytesArg(const TVMArgValue& arg) { return arg.operator std::string(); }
}  // namespace

PackedFunc GraphExecutor::GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) {
  std::string n = name.str();
  // Each closure holds the module so it outlives the handle the caller dropped.
  if (n == "set_input") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue*) {
      EMBER_CHECK_EQ(args.size(), 2) << "set_input(name_or_index, array)";
      SetInput(InputArg(this, args[0], "set_input"), args[1].operator DLTensor*());
    });
  }
  if (n == "set_input_zero_copy") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue*) {
      EMBER_CHECK_EQ(args.size(), 2) << "set_input_zero_copy(name_or_index, array)";
      SetInputZeroCopy(InputArg(this, args[0], "set_input_zero_copy"),
                       args[1].operator DLTensor*());
    });
  }
  if (n == "set_output_zero_copy") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue*) {
      EMBER_CHECK_EQ(args.size(), 2) << "set_output_zero_copy(index, array)";
      SetOutputZeroCopy(args[0].operator int(), args[1].operator DLTensor*());
    });
  }
  if (n == "run") {
    return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue*) { Run(); });
  }
  if (n == "get_output") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
      EMBER_CHECK(args.size() == 1 || args.size() == 2) << "get_output(index[, out])";
      if (args.size() == 2) {
        CopyOutputTo(args[0].operator int(), args[1].operator DLTensor*());
      } else {
        *rv = GetOutput(args[0].operator int());
      }
    });
  }
  if (n == "get_input") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
      EMBER_CHECK_EQ(args.size(), 1) << "get_input(name_or_index)";
      *rv = GetInput(InputArg(this, args[0], "get_input"));
    });
  }
  if (n == "get_num_outputs") {
    return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = NumOutputs(); });
  }
  if (n == "get_num_inputs") {
    return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = NumInputs(); });
  }
  if (n == "get_input_index") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
      *rv = GetInputIndex(args[0].operator std::string());
    });
  }
  if (n == "get_input_name") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
      int index = args[0].operator int();
      InputEntry(index, "get_input_name");
      *rv = InputName(index);
    });
  }
  if (n == "get_input_info") {
    return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = GetInputInfo(); });
  }
  if (n == "get_bound_inputs") {  // Ember's: {name: value} of the inputs emberc --bind fixed
    return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) {
      Map<String, String> bound;
      for (const auto& [name, value] : bound_inputs_) bound.Set(String(name), String(value));
      *rv = bound;
    });
  }
  if (n == "get_output_info") {
    return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = GetOutputInfo(); });
  }
  if (n == "load_params") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue*) {
      std::string bytes = BytesArg(args[0]);
      LoadParams(bytes.data(), bytes.size());
    });
  }
  if (n == "share_params") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue*) {
      Module other = args[0].operator Module();
      const auto* exec = other.as<GraphExecutor>();
      EMBER_CHECK(exec != nullptr) << "share_params: argument 0 is a " << other->type_key()
                                   << " module, expected a GraphExecutor";
      std::string bytes = BytesArg(args[1]);
      ShareParams(*exec, bytes.data(), bytes.size());
    });
  }
#if EMBER_RUNTIME_MINIMAL
  if (n == "run_individual" || n == "trace_json" || n == "profile" || n == "profile_json") {
    return PackedFunc([n](TVMArgs, TVMRetValue*) { ThrowNotInMinimalRuntime(n.c_str()); });
  }
#else
  if (n == "run_individual") {
    // TVM's debug executor result: one double per node and repeat (seconds), as bytes.
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
      CallGuard guard(this, "run_individual");
      int number = args.size() > 0 ? args[0].operator int() : 10;
      int repeat = args.size() > 1 ? args[1].operator int() : 1;
      int min_repeat_ms = args.size() > 2 ? args[2].operator int() : 1;
      ProfileReport report = ProfileExecutor(Module(sptr_to_self), number, repeat, min_repeat_ms);
      std::vector<double> by_node(graph_.nodes.size(), 0.0);
      for (const NodeTiming& t : report.nodes) by_node[t.node_id] = t.mean_us * 1e-6;
      std::string bytes(reinterpret_cast<const char*>(by_node.data()),
                        by_node.size() * sizeof(double));
      *rv = TVMByteArray{bytes.data(), bytes.size()};
    });
  }
  if (n == "trace_json") {
    return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
      CallGuard guard(this, "trace_json");
      *rv = TraceExecutorRuns(Module(sptr_to_self), args.size() > 0 ? args[0].operator int() : 1);
    });
  }
  if (n == "profile" || n == "profile_json") {
    bool json = n == "profile_json";
    return PackedFunc([sptr_to_self, this, json](TVMArgs args, TVMRetValue* rv) {
      CallGuard guard(this, json ? "profile_json" : "profile");
      int number = args.size() > 0 ? args[0].operator int() : 10;
      int repeat = args.size() > 1 ? args[1].operator int() : 1;
      int min_repeat_ms = args.size() > 2 ? args[2].operator int() : 1;
      ProfileReport report = ProfileExecutor(Module(sptr_to_self), number, repeat, min_repeat_ms);
      *rv = json ? report.Json() : report.Table();
    });
  }
#endif
  return PackedFunc();
}

Module CreateGraphExecutor(const std::string& graph_json, Module lib,
                           const std::vector<DLDevice>& devs) {
  auto exec = make_object<GraphExecutor>();
  exec->Init(graph_json, std::move(lib), devs, nullptr);
  return Module(ObjectPtr<Object>(std::move(exec)));
}

namespace {
std::vector<DLDevice> DevicesFromArgs(TVMArgs args, int first) {
  std::vector<DLDevice> devs;
  for (int i = first; i < args.size(); ++i) {
    if (args[i].type_code() == kDLDevice) {
      devs.push_back(args[i].operator DLDevice());
    } else {
      // TVM's Python passes (device_type, device_id) pairs as ints.
      EMBER_CHECK_LT(i + 1, args.size()) << "devices must be given as (device_type, device_id)";
      devs.push_back(
          DLDevice{static_cast<DLDeviceType>(args[i].operator int()), args[i + 1].operator int()});
      ++i;
    }
  }
  if (devs.empty()) devs.push_back(kCPU);
  return devs;
}
}  // namespace

EMBER_REGISTER_GLOBAL("tvm.graph_executor.create").set_body([](TVMArgs args, TVMRetValue* rv) {
  EMBER_CHECK_GE(args.size(), 2) << "tvm.graph_executor.create(graph_json, lib, devices...)";
  *rv = CreateGraphExecutor(args[0].operator std::string(), args[1].operator Module(),
                            DevicesFromArgs(args, 2));
});

std::vector<DLDevice> GraphExecutorDevicesFromArgs(TVMArgs args, int first) {
  return DevicesFromArgs(args, first);
}

}  // namespace ember::runtime
