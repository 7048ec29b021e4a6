// The graph executor module: storage planning, prebuilt operator calls and the TVM-named
// PackedFunc interface. Public entry points are in include/ember/runtime/graph_executor.h.
#ifndef EMBER_RUNTIME_GRAPH_EXECUTOR_GRAPH_EXECUTOR_H_
#define EMBER_RUNTIME_GRAPH_EXECUTOR_GRAPH_EXECUTOR_H_

#include <ember/runtime/graph_executor.h>
#include <ember/runtime/module.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/packed_func.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph_executor/graph_json.h"

namespace ember::runtime {

/*! \brief Params by name, as a factory holds them; executors view them read-only. */
using ParamMap = std::unordered_map<std::string, NDArray>;

/*!
 * One executor serves one call at a time: its inputs, activations and outputs are single buffers.
 * Every stateful call (set_input*, set_output_zero_copy, run, get_input, get_output, load_params,
 * share_params, the profiler) claims the executor for its duration, and a call that finds it
 * claimed by another thread throws (CallGuard) instead of reading or writing buffers another
 * thread is using. ExecutorPool (executor_pool.h) is the thread-safe way to run concurrently.
 */
class GraphExecutor : public ModuleNode {
 public:
  /*!
   * \brief Claims the executor for the calling thread for its lifetime; throws naming \p call and
   * the call in progress when another thread holds it. The same thread may claim again (nested).
   */
  class CallGuard {
   public:
    CallGuard(const GraphExecutor* exec, const char* call);
    ~CallGuard();
    CallGuard(const CallGuard&) = delete;
    CallGuard& operator=(const CallGuard&) = delete;

   private:
    const GraphExecutor* exec_;
  };

  const char* type_key() const final { return "GraphExecutor"; }
  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) final;

  /*!
   * \brief Parses and checks \p graph_json, plans storage and binds every operator call.
   * Params in \p shared_params (may be null) whose tensor has a storage id of its own are used in
   * place (zero-copy, never written); the others are copied in.
   */
  void Init(const std::string& graph_json, Module lib, const std::vector<DLDevice>& devs,
            const ParamMap* shared_params);

  /*! \brief Runs every operator in order; allocates nothing. */
  void Run();

  int GetInputIndex(const std::string& name) const;
  /*! \brief Like GetInputIndex, but throws listing the valid names. */
  int InputIndexOrThrow(const std::string& name, const char* caller) const;
  int NumInputs() const { return static_cast<int>(input_nodes_.size()); }
  int NumOutputs() const { return static_cast<int>(outputs_.size()); }
  /*! \brief Indices of the inputs that are not params (what get_input_info lists), in order. */
  std::vector<int> DataInputs() const;
  const std::string& InputName(int index) const;
  /*! \brief Type and shape of input \p index or output \p index as the graph declares them. */
  const DLTensor& InputTensor(int index) const;
  const DLTensor& OutputTensor(int index) const;
  void SetInput(int index, const DLTensor* data);
  void SetInputZeroCopy(int index, const DLTensor* data);
  void SetOutputZeroCopy(int index, const DLTensor* data);
  NDArray GetInput(int index) const;
  NDArray GetOutput(int index) const;
  void CopyOutputTo(int index, DLTensor* out) const;
  /*! \brief Copies the arrays of a params blob into the inputs of the same names. */
  void LoadParams(const char* data, size_t size);
  /*! \brief Makes the inputs named in \p param_blob use \p other's arrays (no copy). */
  void ShareParams(const GraphExecutor& other, const char* data, size_t size);
  /*! \brief {"shape": {name: ShapeTuple}, "dtype": {name: String}} of inputs that are not params.
   */
  ObjectRef GetInputInfo() const;
  ObjectRef GetOutputInfo() const;

  // The profiler's view: operators in run order.
  size_t NumOps() const { return ops_.size(); }
  /*! \brief Calls operator \p i once (throws naming the node on failure). */
  void RunOp(size_t i);
  NodeTiming DescribeOp(size_t i) const;

  const Graph& graph() const { return graph_; }

 private:
  // One operator call with everything bound at Init: run() passes these arrays as they are.
  struct OpExec {
    uint32_t node_id = 0;
    const PackedFuncObj* fn = nullptr;  // null for "__nop"
    bool is_copy = false;               // "__copy": output = input
    PackedFunc keep_alive;
    std::unique_ptr<DLTensor[]> tensors;  // inputs then outputs; values point here
    std::unique_ptr<int64_t[]> flat_shapes;
    std::unique_ptr<TVMValue[]> values;
    std::unique_ptr<int[]> codes;
    int num_args = 0;
  };

  /*! Calls operator \p i once, unguarded (Run holds the claim for the whole run). */
  void ExecOp(size_t i);
  void SetupStorage(const ParamMap* shared_params);
  void SetupOpExecs();
  /*! Points every DLTensor that stands for entry \p eid at \p data. */
  void SetEntryData(uint32_t eid, void* data);
  void CheckTensorMatches(uint32_t eid, const DLTensor* t, const std::string& what) const;
  /*! Gives a shared (read-only) param entry private memory before it is written. */
  void MakeEntryWritable(uint32_t eid);
  std::string InputNames() const;
  uint32_t InputEntry(int index, const char* caller) const;
  uint32_t OutputEntry(int index, const char* caller) const;

  Graph graph_;
  Module lib_;
  std::vector<DLDevice> devices_;
  std::vector<uint32_t> input_nodes_;  // node ids of arg_nodes, in order, bound ones left out
  std::unordered_map<std::string, int> input_index_;
  std::map<std::string, std::string> bound_inputs_;  // emberc --bind: name -> value
  std::vector<uint32_t> outputs_;                    // entry id of each head
  std::vector<NDArray> storage_pool_;                // one per storage id (undefined when unused)
  std::vector<NDArray> data_entry_;                  // one view per entry
  std::vector<char> entry_shared_;                   // entry views a factory param (read-only)
  std::vector<NDArray> entry_owner_;  // keeps memory an entry uses alive (private or shared)
  std::vector<void*> entry_home_;     // the entry's own memory (zero-copy points elsewhere)
  std::vector<std::vector<DLTensor*>> entry_aliases_;  // every DLTensor standing for an entry
  std::vector<DLDataType> entry_dtype_;
  std::vector<std::string> param_names_;  // inputs bound from params (load/share/factory)
  std::vector<OpExec> ops_;
  // CallGuard's claim: the claiming thread's token (0 = free), its nesting depth and its call.
  mutable std::atomic<uintptr_t> owner_{0};
  mutable int owner_depth_ = 0;  // touched only by the owner
  mutable std::atomic<const char*> owner_call_{nullptr};
};

/*!
 * \brief A new executor from \p factory (a GraphExecutorFactory module) on \p devs, sharing the
 * factory's params; what the factory's "default" function returns.
 */
Module FactoryCreateExecutor(const Module& factory, const std::vector<DLDevice>& devs);

/*! \brief Devices from packed arguments \p first..: DLDevice values or (type, id) int pairs. */
std::vector<DLDevice> GraphExecutorDevicesFromArgs(TVMArgs args, int first);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_GRAPH_EXECUTOR_GRAPH_EXECUTOR_H_
