// ExecutorPool: the thread-safe run over executors of one factory (executor_pool.h).
#include <ember/runtime/data_type.h>
#include <ember/runtime/executor_pool.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/registry.h>

#include <condition_variable>
#include <mutex>
#include <sstream>

#include "graph_executor/graph_executor.h"

namespace ember::runtime {
namespace {

constexpr const char* kPoolTypeKey = "ExecutorPool";

std::string ShapeJson(const DLTensor& t) {
  std::string out = "[";
  for (int i = 0; i < t.ndim; ++i) out += (i ? ", " : "") + std::to_string(t.shape[i]);
  return out + "]";
}

class ExecutorPoolNode : public ModuleNode {
 public:
  ExecutorPoolNode(Module factory, int max_executors)
      : factory_(std::move(factory)), max_executors_(max_executors) {
    if (max_executors < 0) {
      EMBER_LOG_FATAL << "ExecutorPool: max_executors must be >= 0 (0 = no bound), got "
                      << max_executors;
    }
    // The first executor is made now: a bad artifact fails here, and it describes the inputs.
    Module first = FactoryCreateExecutor(factory_, {kCPU});
    const auto* exec = first.as<GraphExecutor>();
    inputs_ = exec->DataInputs();
    for (int index : inputs_) input_names_.push_back(exec->InputName(index));
    num_outputs_ = exec->NumOutputs();
    io_json_ = DescribeIo(*exec);
    idle_.push_back(std::move(first));
    created_ = 1;
  }

  const char* type_key() const final { return kPoolTypeKey; }

  int NumInputs() const { return static_cast<int>(inputs_.size()); }
  int NumOutputs() const { return num_outputs_; }
  const std::string& InputName(int index) const {
    if (index < 0 || index >= NumInputs()) {
      EMBER_LOG_FATAL << "ExecutorPool: input index " << index << " is out of range; the model has "
                      << NumInputs() << " inputs (" << InputList() << ")";
    }
    return input_names_[static_cast<size_t>(index)];
  }
  int NumExecutors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return created_;
  }

  // The thread-safe call: every input set, run, every output copied out.
  void Run(const DLTensor* const* inputs, DLTensor* const* outputs) {
    Lease lease(this);
    GraphExecutor* exec = lease.get();
    for (size_t i = 0; i < inputs_.size(); ++i) exec->SetInput(inputs_[i], inputs[i]);
    exec->Run();
    for (int j = 0; j < num_outputs_; ++j) exec->CopyOutputTo(j, outputs[j]);
  }

  std::vector<NDArray> Run(const std::vector<std::pair<std::string, NDArray>>& named) {
    std::vector<const DLTensor*> in(inputs_.size(), nullptr);
    for (const auto& [name, arr] : named) {
      size_t k = 0;
      while (k < input_names_.size() && input_names_[k] != name) ++k;
      if (k == input_names_.size()) {
        EMBER_LOG_FATAL << "ExecutorPool::Run: no input named \"" << name
                        << "\"; inputs are: " << InputList();
      }
      if (in[k] != nullptr) {
        EMBER_LOG_FATAL << "ExecutorPool::Run: input \"" << name << "\" is given twice";
      }
      if (!arr.defined()) {
        EMBER_LOG_FATAL << "ExecutorPool::Run: input \"" << name << "\" is a null array";
      }
      in[k] = arr.operator->();
    }
    for (size_t k = 0; k < in.size(); ++k) {
      if (in[k] == nullptr) {
        EMBER_LOG_FATAL << "ExecutorPool::Run: input \"" << input_names_[k]
                        << "\" is missing; every call gives every input (" << InputList() << ")";
      }
    }
    std::vector<NDArray> outs;
    std::vector<DLTensor*> out_ptrs;
    for (int j = 0; j < num_outputs_; ++j) {
      const DLTensor& t = output_types_.at(static_cast<size_t>(j));
      outs.push_back(NDArray::Empty(ShapeTuple(std::vector<int64_t>(t.shape, t.shape + t.ndim)),
                                    t.dtype, kCPU));
      out_ptrs.push_back(&outs.back().get_mutable()->dl_tensor);
    }
    Run(in.data(), out_ptrs.data());
    return outs;
  }

  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) final {
    std::string n = name.str();
    if (n == "run") {
      return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue*) {
        const int k = NumInputs();
        if (args.size() != k + num_outputs_) {
          EMBER_LOG_FATAL << "ExecutorPool run: expected " << k << " input arrays (" << InputList()
                          << ") then " << num_outputs_ << " output arrays, got " << args.size()
                          << " arguments";
        }
        std::vector<const DLTensor*> in(static_cast<size_t>(k));
        std::vector<DLTensor*> out(static_cast<size_t>(num_outputs_));
        for (int i = 0; i < args.size(); ++i) {
          DLTensor* t = args[i].operator DLTensor*();
          if (t == nullptr) {
            EMBER_LOG_FATAL << "ExecutorPool run: argument " << i << " ("
                            << (i < k ? "input \"" + input_names_[static_cast<size_t>(i)] + "\""
                                      : "output " + std::to_string(i - k))
                            << ") is null";
          }
          if (i < k) {
            in[static_cast<size_t>(i)] = t;
          } else {
            out[static_cast<size_t>(i - k)] = t;
          }
        }
        Run(in.data(), out.data());
      });
    }
    if (n == "get_num_inputs") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = NumInputs(); });
    }
    if (n == "get_input_name") {
      return PackedFunc([sptr_to_self, this](TVMArgs args, TVMRetValue* rv) {
        *rv = InputName(args[0].operator int());
      });
    }
    if (n == "get_num_outputs") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = NumOutputs(); });
    }
    if (n == "get_num_executors") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = NumExecutors(); });
    }
    if (n == "get_io_json") {
      return PackedFunc([sptr_to_self, this](TVMArgs, TVMRetValue* rv) { *rv = io_json_; });
    }
    return PackedFunc();
  }

 private:
  // An executor checked out for one call, checked back in when the call ends (also by throwing).
  class Lease {
   public:
    explicit Lease(ExecutorPoolNode* pool) : pool_(pool), exec_(pool->CheckOut()) {}
    ~Lease() { pool_->CheckIn(std::move(exec_)); }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    GraphExecutor* get() const { return static_cast<GraphExecutor*>(exec_.get()); }

   private:
    ExecutorPoolNode* pool_;
    Module exec_;
  };

  Module CheckOut() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!idle_.empty()) {
        Module exec = std::move(idle_.back());
        idle_.pop_back();
        return exec;
      }
      if (max_executors_ == 0 || created_ < max_executors_) break;
      returned_.wait(lock);
    }
    ++created_;
    idle_.reserve(static_cast<size_t>(created_));  // so CheckIn never allocates
    lock.unlock();
    try {
      return FactoryCreateExecutor(factory_, {kCPU});  // outside the lock: it allocates
    } catch (...) {
      lock.lock();
      --created_;
      returned_.notify_one();
      throw;
    }
  }

  void CheckIn(Module exec) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      idle_.push_back(std::move(exec));
    }
    returned_.notify_one();
  }

  std::string InputList() const {
    std::string out;
    for (const auto& name : input_names_) out += (out.empty() ? "" : ", ") + name;
    return out.empty() ? "(none)" : out;
  }

  std::string DescribeIo(const GraphExecutor& exec) {
    std::ostringstream os;
    os << "{\"inputs\": [";
    for (size_t k = 0; k < inputs_.size(); ++k) {
      const DLTensor& t = exec.InputTensor(inputs_[k]);
      os << (k ? ", " : "") << "{\"name\": \"" << input_names_[k]
         << "\", \"shape\": " << ShapeJson(t) << ", \"dtype\": \"" << DLDataTypeToString(t.dtype)
         << "\"}";
    }
    os << "], \"outputs\": [";
    for (int j = 0; j < num_outputs_; ++j) {
      const DLTensor& t = exec.OutputTensor(j);
      output_shapes_.emplace_back(t.shape, t.shape + t.ndim);
      os << (j ? ", " : "") << "{\"shape\": " << ShapeJson(t) << ", \"dtype\": \""
         << DLDataTypeToString(t.dtype) << "\"}";
    }
    os << "]}";
    // Types of the outputs for Run by name; shapes point at output_shapes_, which stays put.
    for (int j = 0; j < num_outputs_; ++j) {
      DLTensor t = exec.OutputTensor(j);
      t.data = nullptr;
      t.shape = output_shapes_[static_cast<size_t>(j)].data();
      t.strides = nullptr;
      output_types_.push_back(t);
    }
    return os.str();
  }

  Module factory_;
  const int max_executors_;
  std::vector<int> inputs_;  // executor input indices of the data inputs
  std::vector<std::string> input_names_;
  int num_outputs_ = 0;
  std::string io_json_;
  std::vector<std::vector<int64_t>> output_shapes_;
  std::vector<DLTensor> output_types_;

  mutable std::mutex mu_;  // guards idle_ and created_
  std::condition_variable returned_;
  std::vector<Module> idle_;
  int created_ = 0;
};

ExecutorPoolNode* PoolNode(const Module& m) { return static_cast<ExecutorPoolNode*>(m.get()); }

}  // namespace

Module CreateExecutorPool(Module factory, int max_executors) {
  return Module(
      ObjectPtr<Object>(make_object<ExecutorPoolNode>(std::move(factory), max_executors)));
}

ExecutorPool::ExecutorPool(Module factory, int max_executors)
    : module_(CreateExecutorPool(std::move(factory), max_executors)) {}

int ExecutorPool::NumInputs() const { return PoolNode(module_)->NumInputs(); }
const std::string& ExecutorPool::InputName(int index) const {
  return PoolNode(module_)->InputName(index);
}
int ExecutorPool::NumOutputs() const { return PoolNode(module_)->NumOutputs(); }
int ExecutorPool::NumExecutors() const { return PoolNode(module_)->NumExecutors(); }

std::vector<NDArray> ExecutorPool::Run(
    const std::vector<std::pair<std::string, NDArray>>& inputs) const {
  return PoolNode(module_)->Run(inputs);
}

void ExecutorPool::Run(const std::vector<const DLTensor*>& inputs,
                       const std::vector<DLTensor*>& outputs) const {
  ExecutorPoolNode* node = PoolNode(module_);
  if (static_cast<int>(inputs.size()) != node->NumInputs() ||
      static_cast<int>(outputs.size()) != node->NumOutputs()) {
    EMBER_LOG_FATAL << "ExecutorPool::Run: expected " << node->NumInputs() << " inputs and "
                    << node->NumOutputs() << " outputs, got " << inputs.size() << " and "
                    << outputs.size();
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      EMBER_LOG_FATAL << "ExecutorPool::Run: input \"" << node->InputName(static_cast<int>(i))
                      << "\" is null";
    }
  }
  for (size_t j = 0; j < outputs.size(); ++j) {
    if (outputs[j] == nullptr) EMBER_LOG_FATAL << "ExecutorPool::Run: output " << j << " is null";
  }
  node->Run(inputs.data(), outputs.data());
}

EMBER_REGISTER_GLOBAL("runtime.create_executor_pool").set_body([](TVMArgs args, TVMRetValue* rv) {
  if (args.size() < 1 || args.size() > 2) {
    EMBER_LOG_FATAL << "runtime.create_executor_pool(factory[, max_executors]): got " << args.size()
                    << " arguments";
  }
  *rv = CreateExecutorPool(args[0].operator Module(), args.size() > 1 ? args[1].operator int() : 0);
});

}  // namespace ember::runtime
