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

// The body of one function of the interface: the executor, the module holding it, the call.
using Body = void (*)(GraphExecutor* self, const ObjectPtr<Object>& module, TVMArgs args,
                      TVMRetValue* rv);

struct NamedBody {
  const char* name;
  Body body;
};

#if !EMBER_RUNTIME_MINIMAL
// (number, repeat, min_repeat_ms) from the optional arguments, TVM's defaults.
ProfileReport ProfileArgs(const ObjectPtr<Object>& module, TVMArgs args) {
  int number = args.size() > 0 ? args[0].operator int() : 10;
  int repeat = args.size() > 1 ? args[1].operator int() : 1;
  int min_repeat_ms = args.size() > 2 ? args[2].operator int() : 1;
  return ProfileExecutor(Module(module), number, repeat, min_repeat_ms);
}
#endif

}  // namespace

PackedFunc GraphExecutor::GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) {
  // Plain functions behind one closure type: a closure type per function would be a PackedFunc
  // instance each, library size for nothing.
  static const NamedBody kFunctions[] = {
    {"set_input",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue*) {
       EMBER_CHECK_EQ(args.size(), 2) << "set_input(name_or_index, array)";
       self->SetInput(InputArg(self, args[0], "set_input"), args[1].operator DLTensor*());
     }},
    {"set_input_zero_copy",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue*) {
       EMBER_CHECK_EQ(args.size(), 2) << "set_input_zero_copy(name_or_index, array)";
       self->SetInputZeroCopy(InputArg(self, args[0], "set_input_zero_copy"),
                              args[1].operator DLTensor*());
     }},
    {"set_output_zero_copy",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue*) {
       EMBER_CHECK_EQ(args.size(), 2) << "set_output_zero_copy(index, array)";
       self->SetOutputZeroCopy(args[0].operator int(), args[1].operator DLTensor*());
     }},
    {"run",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs, TVMRetValue*) { self->Run(); }},
    {"get_output",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue* rv) {
       EMBER_CHECK(args.size() == 1 || args.size() == 2) << "get_output(index[, out])";
       if (args.size() == 2) {
         self->CopyOutputTo(args[0].operator int(), args[1].operator DLTensor*());
       } else {
         *rv = self->GetOutput(args[0].operator int());
       }
     }},
    {"get_input",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue* rv) {
       EMBER_CHECK_EQ(args.size(), 1) << "get_input(name_or_index)";
       *rv = self->GetInput(InputArg(self, args[0], "get_input"));
     }},
    {"get_num_outputs", [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs,
                           TVMRetValue* rv) { *rv = self->NumOutputs(); }},
    {"get_num_inputs", [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs,
                          TVMRetValue* rv) { *rv = self->NumInputs(); }},
    {"get_input_index",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue* rv) {
       *rv = self->GetInputIndex(args[0].operator std::string());
     }},
    {"get_input_name",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue* rv) {
       int index = args[0].operator int();
       self->InputEntry(index, "get_input_name");
       *rv = self->InputName(index);
     }},
    {"get_input_info", [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs,
                          TVMRetValue* rv) { *rv = self->GetInputInfo(); }},
    // Ember's: {name: value} of the inputs emberc --bind fixed.
    {"get_bound_inputs",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs, TVMRetValue* rv) {
       Map<String, String> bound;
       for (const auto& [name, value] : self->bound_inputs_) {
         bound.Set(String(name), String(value));
       }
       *rv = bound;
     }},
    {"get_output_info", [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs,
                           TVMRetValue* rv) { *rv = self->GetOutputInfo(); }},
    {"load_params",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue*) {
       std::string bytes = BytesArg(args[0]);
       self->LoadParams(bytes.data(), bytes.size());
     }},
    {"share_params",
     [](GraphExecutor* self, const ObjectPtr<Object>&, TVMArgs args, TVMRetValue*) {
       Module other = args[0].operator Module();
       const auto* exec = other.as<GraphExecutor>();
       EMBER_CHECK(exec != nullptr) << "share_params: argument 0 is a " << other->type_key()
                                    << " module, expected a GraphExecutor";
       std::string bytes = BytesArg(args[1]);
       self->ShareParams(*exec, bytes.data(), bytes.size());
     }},
#if EMBER_RUNTIME_MINIMAL
    {"run_individual", [](GraphExecutor*, const ObjectPtr<Object>&, TVMArgs,
                          TVMRetValue*) { ThrowNotInMinimalRuntime("run_individual"); }},
    {"trace_json", [](GraphExecutor*, const ObjectPtr<Object>&, TVMArgs,
                      TVMRetValue*) { ThrowNotInMinimalRuntime("trace_json"); }},
    {"profile", [](GraphExecutor*, const ObjectPtr<Object>&, TVMArgs,
                   TVMRetValue*) { ThrowNotInMinimalRuntime("profile"); }},
    {"profile_json", [](GraphExecutor*, const ObjectPtr<Object>&, TVMArgs,
                        TVMRetValue*) { ThrowNotInMinimalRuntime("profile_json"); }},
#else
    // TVM's debug executor result: one double per node and repeat (seconds), as bytes.
    {"run_individual",
     [](GraphExecutor* self, const ObjectPtr<Object>& module, TVMArgs args, TVMRetValue* rv) {
       CallGuard guard(self, "run_individual");
       ProfileReport report = ProfileArgs(module, args);
       std::vector<double> by_node(self->graph_.nodes.size(), 0.0);
       for (const NodeTiming& t : report.nodes) by_node[t.node_id] = t.mean_us * 1e-6;
       std::string bytes(reinterpret_cast<const char*>(by_node.data()),
                         by_node.size() * sizeof(double));
       *rv = TVMByteArray{bytes.data(), bytes.size()};
     }},
    {"trace_json",
     [](GraphExecutor* self, const ObjectPtr<Object>& module, TVMArgs args, TVMRetValue* rv) {
       CallGuard guard(self, "trace_json");
       *rv = TraceExecutorRuns(Module(module), args.size() > 0 ? args[0].operator int() : 1);
     }},
    {"profile",
     [](GraphExecutor* self, const ObjectPtr<Object>& module, TVMArgs args, TVMRetValue* rv) {
       CallGuard guard(self, "profile");
       *rv = ProfileArgs(module, args).Table();
     }},
    {"profile_json",
     [](GraphExecutor* self, const ObjectPtr<Object>& module, TVMArgs args, TVMRetValue* rv) {
       CallGuard guard(self, "profile_json");
       *rv = ProfileArgs(module, args).Json();
     }},
#endif
  };
  const std::string n = name.str();
  for (const NamedBody& f : kFunctions) {
    if (n != f.name) continue;
    // The closure holds the module so it outlives the handle the caller dropped.
    GraphExecutor* self = this;
    Body body = f.body;
    return PackedFunc([sptr_to_self, self, body](TVMArgs args, TVMRetValue* rv) {
      body(self, sptr_to_self, args, rv);
    });
  }
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
