// GraphExecutor: storage planning, operator binding, run(), inputs, outputs and params. Its
// PackedFunc interface is graph_executor_module.cc.
#include "graph_executor/graph_executor.h"

#include <ember/runtime/data_type.h>
#include <ember/runtime/device_api.h>
#include <ember/runtime/logging.h>
#include <ember/runtime/threading.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>

namespace ember::runtime {
namespace {

constexpr const char* kCopyFunc = "__copy";

std::string ShapeString(const int64_t* shape, int ndim) {
  std::ostringstream os;
  os << '[';
  for (int i = 0; i < ndim; ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

std::string Describe(const DLTensor* t) {
  return DLDataTypeToString(t->dtype) + ShapeString(t->shape, t->ndim);
}

bool IsCompact(const DLTensor* t) {
  if (t->strides == nullptr) return true;
  int64_t expected = 1;
  for (int i = t->ndim - 1; i >= 0; --i) {
    if (t->shape[i] != 1 && t->strides[i] != expected) return false;
    expected *= t->shape[i];
  }
  return true;
}

// Bytes of a graph entry, overflow-checked with the entry named.
size_t EntryBytes(const std::vector<int64_t>& shape, DLDataType dtype, size_t eid) {
  uint64_t count = 1;
  for (int64_t d : shape) {
    uint64_t ud = static_cast<uint64_t>(d);
    if (ud != 0 && count > std::numeric_limits<uint64_t>::max() / ud) {
      EMBER_LOG_FATAL << "graph.json: attrs.shape[" << eid << "] has too many elements";
    }
    count *= ud;
  }
  uint64_t item = DataTypeBytes(dtype);
  if (item != 0 && count > std::numeric_limits<size_t>::max() / item / 2) {
    EMBER_LOG_FATAL << "graph.json: attrs.shape[" << eid << "] is too large to allocate";
  }
  return static_cast<size_t>(count * item);
}

// Refuses a storage plan larger than a process can hold (the machine's memory, or a 32-bit
// device's address space) before any of it is allocated: each block would pass the allocator's
// own check, and touching them at load would have the process killed part-way (an input shape
// far too large for the device, or a corrupt graph.json).
void CheckStorageFits(const Graph& g, const std::vector<size_t>& pool_bytes,
                      const std::vector<size_t>& entry_bytes) {
  uint64_t total = 0;
  for (size_t b : pool_bytes) total = std::min<uint64_t>(total + b, uint64_t{1} << 62);
  if (total <= ProcessMemoryBytes()) return;
  const size_t largest = static_cast<size_t>(
      std::max_element(entry_bytes.begin(), entry_bytes.end()) - entry_bytes.begin());
  const auto node = std::upper_bound(g.node_row_ptr.begin(), g.node_row_ptr.end(), largest) -
                    g.node_row_ptr.begin() - 1;
  const auto& shape = g.shape[largest];
  EMBER_LOG_FATAL << "graph.json: the graph's values need " << (total >> 20)
                  << " MB of storage, more than the " << (ProcessMemoryBytes() >> 20)
                  << " MB a process can hold here; the largest is node \""
                  << g.nodes[static_cast<size_t>(node)].name << "\"'s output "
                  << ShapeString(shape.data(), static_cast<int>(shape.size())) << " ("
                  << (entry_bytes[largest] >> 20)
                  << " MB). Compile with smaller input shapes for this device";
}

// The address of the data a zero-copy call points an entry at, which kernels read as a compact,
// aligned array; \p hint ends the alignment message.
char* ZeroCopyAddress(const DLTensor* data, const std::string& what, const char* hint) {
  char* ptr = static_cast<char*>(data->data) + data->byte_offset;
  EMBER_CHECK(IsCompact(data)) << what << ": the tensor must be compact (row-major, no gaps)";
  if (reinterpret_cast<uintptr_t>(ptr) % kAllocAlignment != 0) {
    EMBER_LOG_FATAL << what << ": the data must be " << kAllocAlignment
                    << "-byte aligned (address % " << kAllocAlignment << " = "
                    << reinterpret_cast<uintptr_t>(ptr) % kAllocAlignment << ")" << hint;
  }
  return ptr;
}

// A per-thread address: the token CallGuard stores to say which thread holds an executor.
uintptr_t ThisThreadToken() {
  thread_local const char token = 0;
  return reinterpret_cast<uintptr_t>(&token);
}

}  // namespace

GraphExecutor::CallGuard::CallGuard(const GraphExecutor* exec, const char* call) : exec_(exec) {
  const uintptr_t me = ThisThreadToken();
  uintptr_t holder = 0;
  if (!exec->owner_.compare_exchange_strong(holder, me, std::memory_order_acquire,
                                            std::memory_order_relaxed) &&
      holder != me) {
    const char* other = exec->owner_call_.load(std::memory_order_relaxed);
    EMBER_LOG_FATAL << "GraphExecutor::" << call << " called from two threads at once (another "
                    << "thread is in " << (other != nullptr ? other : "a call")
                    << " on this executor); an executor serves one call at a time: use an "
                    << "ExecutorPool (C++ ember/runtime/executor_pool.h, the global "
                    << "runtime.create_executor_pool, Python ember.ExecutorPool; not in the "
                    << "minimal runtime) for concurrent runs, or one executor per thread";
  }
  if (exec->owner_depth_++ == 0) exec->owner_call_.store(call, std::memory_order_relaxed);
}

GraphExecutor::CallGuard::~CallGuard() {
  if (--exec_->owner_depth_ == 0) {
    exec_->owner_call_.store(nullptr, std::memory_order_relaxed);
    exec_->owner_.store(0, std::memory_order_release);
  }
}

void GraphExecutor::Init(const std::string& graph_json, Module lib,
                         const std::vector<DLDevice>& devs, const ParamMap* shared_params) {
  EMBER_CHECK(lib.defined()) << "GraphExecutor: the kernel library module is null";
  EMBER_CHECK(!devs.empty()) << "GraphExecutor: no device given";
  for (const DLDevice& d : devs) {
    if (d.device_type != kDLCPU) {
      EMBER_LOG_FATAL << "GraphExecutor: device " << d << " is not supported; this runtime runs on "
                      << "cpu only";
    }
  }
  graph_ = ParseGraphJson(graph_json);
  lib_ = std::move(lib);
  devices_ = devs;
  // Inputs emberc --bind fixed are not inputs of this artifact any more.
  for (uint32_t nid : graph_.arg_nodes) {
    const GraphNode& node = graph_.nodes[nid];
    if (node.bound) {
      bound_inputs_.emplace(node.name, node.bound_value);
    } else {
      input_index_.emplace(node.name, static_cast<int>(input_nodes_.size()));
      input_nodes_.push_back(nid);
    }
  }
  for (const GraphEntry& e : graph_.heads) outputs_.push_back(graph_.EntryId(e));
  size_t n = graph_.NumEntries();
  entry_dtype_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    try {
      entry_dtype_[i] = StringToDLDataType(graph_.dltype[i]);
    } catch (const Error& e) {
      EMBER_LOG_FATAL << "graph.json: attrs.dltype[" << i << "]: " << e.what();
    }
    if (!graph_.device_index.empty() && graph_.device_index[i] != kDLCPU) {
      EMBER_LOG_FATAL << "graph.json: attrs.device_index[" << i << "] is device type "
                      << graph_.device_index[i] << "; this runtime runs on cpu (" << kDLCPU
                      << ") only";
    }
  }
  SetupStorage(shared_params);
  SetupOpExecs();
}

void GraphExecutor::SetupStorage(const ParamMap* shared_params) {
  size_t n = graph_.NumEntries();
  std::vector<size_t> bytes(n);
  std::vector<int> sid_users(n, 0);
  for (size_t eid = 0; eid < n; ++eid) {
    bytes[eid] = EntryBytes(graph_.shape[eid], entry_dtype_[eid], eid);
    ++sid_users[static_cast<size_t>(graph_.storage_id[eid])];
  }
  // Params the factory holds are used in place when their entry has a storage id of its own;
  // otherwise (shared storage) they are copied in after allocation.
  entry_shared_.assign(n, false);
  std::vector<std::pair<uint32_t, NDArray>> to_copy;
  if (shared_params != nullptr) {
    for (uint32_t nid : input_nodes_) {
      auto it = shared_params->find(graph_.nodes[nid].name);
      if (it == shared_params->end()) continue;
      uint32_t eid = graph_.EntryId(nid, 0);
      const DLTensor* p = it->second.operator->();
      const auto& shape = graph_.shape[eid];
      bool same = p->dtype == entry_dtype_[eid] && static_cast<size_t>(p->ndim) == shape.size() &&
                  std::equal(shape.begin(), shape.end(), p->shape);
      if (!same) {
        EMBER_LOG_FATAL << "param \"" << it->first << "\": the graph expects "
                        << DLDataTypeToString(entry_dtype_[eid])
                        << ShapeString(shape.data(), static_cast<int>(shape.size()))
                        << ", the params hold " << Describe(p);
      }
      param_names_.push_back(it->first);
      bool aligned = reinterpret_cast<uintptr_t>(static_cast<char*>(p->data) + p->byte_offset) %
                         kAllocAlignment ==
                     0;
      if (sid_users[static_cast<size_t>(graph_.storage_id[eid])] == 1 && aligned && IsCompact(p)) {
        entry_shared_[eid] = true;
      } else {
        to_copy.emplace_back(eid, it->second);
      }
    }
  }
  std::vector<size_t> pool_bytes(n, 0);
  std::vector<char> pool_used(n, false);
  for (size_t eid = 0; eid < n; ++eid) {
    if (entry_shared_[eid]) continue;
    size_t sid = static_cast<size_t>(graph_.storage_id[eid]);
    pool_bytes[sid] = std::max(pool_bytes[sid], bytes[eid]);
    pool_used[sid] = true;
  }
  CheckStorageFits(graph_, pool_bytes, bytes);
  storage_pool_.assign(n, NDArray());
  for (size_t sid = 0; sid < n; ++sid) {
    if (!pool_used[sid]) continue;
    int64_t len = static_cast<int64_t>(std::max<size_t>(pool_bytes[sid], 1));
    storage_pool_[sid] = NDArray::Empty(ShapeTuple({len}), kUInt8, devices_[0]);
    // Touched here, at load, so that the first run does not take a page fault per 4 KB of
    // activations (MobileNetV2: 2,200 faults, half again a steady run's time).
    std::memset(storage_pool_[sid]->data, 0, static_cast<size_t>(len));
  }
  data_entry_.resize(n);
  entry_owner_.assign(n, NDArray());
  entry_home_.assign(n, nullptr);
  entry_aliases_.assign(n, {});
  for (size_t eid = 0; eid < n; ++eid) {
    ShapeTuple shape(graph_.shape[eid]);
    if (entry_shared_[eid]) {
      uint32_t nid = 0;
      for (uint32_t id : input_nodes_) {
        if (graph_.EntryId(id, 0) == eid) nid = id;
      }
      data_entry_[eid] =
          shared_params->at(graph_.nodes[nid].name).CreateView(shape, entry_dtype_[eid]);
    } else {
      data_entry_[eid] = storage_pool_[static_cast<size_t>(graph_.storage_id[eid])].CreateView(
          shape, entry_dtype_[eid]);
    }
    DLTensor* t = &data_entry_[eid].get_mutable()->dl_tensor;
    entry_home_[eid] = t->data;
    entry_aliases_[eid].push_back(t);
  }
  // An input run() reads before any set_input holds zeros, not whatever the allocator left: the
  // same outputs on every run. Inputs own their storage (storage_plan_check.h), so it stays so.
  for (uint32_t nid : input_nodes_) {
    uint32_t eid = graph_.EntryId(nid, 0);
    if (!entry_shared_[eid]) std::memset(data_entry_[eid]->data, 0, bytes[eid]);
  }
  for (auto& [eid, arr] : to_copy) data_entry_[eid].CopyFrom(arr);
}

void GraphExecutor::SetupOpExecs() {
  for (uint32_t nid = 0; nid < graph_.nodes.size(); ++nid) {
    const GraphNode& node = graph_.nodes[nid];
    if (node.op != "tvm_op" || node.func_name == kNopFunc) continue;
    OpExec op;
    op.node_id = nid;
    op.num_args = static_cast<int>(node.inputs.size() + node.num_outputs);
    op.tensors.reset(new DLTensor[op.num_args]);
    op.flat_shapes.reset(new int64_t[op.num_args]);
    op.values.reset(new TVMValue[op.num_args]);
    op.codes.reset(new int[op.num_args]);
    for (int i = 0; i < op.num_args; ++i) {
      size_t k = static_cast<size_t>(i);
      uint32_t eid = k < node.inputs.size()
                         ? graph_.EntryId(node.inputs[k])
                         : graph_.EntryId(nid, static_cast<uint32_t>(k - node.inputs.size()));
      DLTensor& t = op.tensors[i];
      t = data_entry_[eid].get()->dl_tensor;
      if (node.flatten_data) {
        int64_t count = 1;
        for (int d = 0; d < t.ndim; ++d) count *= t.shape[d];
        op.flat_shapes[i] = count;
        t.ndim = 1;
        t.shape = &op.flat_shapes[i];
      }
      op.values[i].v_handle = &t;
      op.codes[i] = kTVMDLTensorHandle;
      entry_aliases_[eid].push_back(&t);
    }
    if (node.func_name == kCopyFunc) {
      if (node.inputs.size() != 1 || node.num_outputs != 1) {
        EMBER_LOG_FATAL << "graph.json: node " << nid << " (\"" << node.name << "\"): " << kCopyFunc
                        << " needs one input and one output";
      }
      op.is_copy = true;
    } else {
      op.keep_alive = lib_.GetFunction(node.func_name, true);
      if (op.keep_alive == nullptr) {
        EMBER_LOG_FATAL << "graph.json: node " << nid << " (\"" << node.name << "\") calls \""
                        << node.func_name << "\", which the kernel library (" << lib_->type_key()
                        << ") does not export";
      }
      op.fn = op.keep_alive.get();
    }
    ops_.push_back(std::move(op));
  }
}

void GraphExecutor::RunOp(size_t i) {
  CallGuard guard(this, "run");
  ExecOp(i);
}

void GraphExecutor::ExecOp(size_t i) {
  OpExec& op = ops_[i];
  try {
    if (op.fn != nullptr) {
      TVMRetValue rv;
      op.fn->CallPacked(TVMArgs(op.values.get(), op.codes.get(), op.num_args), &rv);
    } else if (op.is_copy) {
      NDArray::CopyFromTo(&op.tensors[0], &op.tensors[1]);
    }
  } catch (const std::exception& e) {
    const GraphNode& node = graph_.nodes[op.node_id];
    EMBER_LOG_FATAL << "run: node " << op.node_id << " (\"" << node.name << "\", kernel \""
                    << node.func_name << "\") failed: " << e.what();
  }
}

void GraphExecutor::Run() {
  CallGuard guard(this, "run");
  threading::RunScope run;  // keeps the pool's workers spinning between the run's launches
  for (size_t i = 0; i < ops_.size(); ++i) ExecOp(i);
}

NodeTiming GraphExecutor::DescribeOp(size_t i) const {
  const OpExec& op = ops_[i];
  const GraphNode& node = graph_.nodes[op.node_id];
  NodeTiming t;
  t.node_id = static_cast<int>(op.node_id);
  t.name = node.name;
  t.func_name = node.func_name;
  uint32_t eid = graph_.EntryId(op.node_id, 0);
  const auto& shape = graph_.shape[eid];
  t.shape = ShapeString(shape.data(), static_cast<int>(shape.size()));
  t.dtype = graph_.dltype[eid];
  for (const GraphEntry& in : node.inputs) {
    const auto& in_shape = graph_.shape[graph_.EntryId(in)];
    if (!t.input_shapes.empty()) t.input_shapes += ", ";
    t.input_shapes += ShapeString(in_shape.data(), static_cast<int>(in_shape.size()));
  }
  return t;
}

// ---- inputs and outputs

int GraphExecutor::GetInputIndex(const std::string& name) const {
  auto it = input_index_.find(name);
  return it == input_index_.end() ? -1 : it->second;
}

std::string GraphExecutor::InputNames() const {
  std::string out;
  for (uint32_t nid : input_nodes_) {
    if (std::find(param_names_.begin(), param_names_.end(), graph_.nodes[nid].name) !=
        param_names_.end()) {
      continue;
    }
    out += (out.empty() ? "" : ", ") + graph_.nodes[nid].name;
  }
  return out.empty() ? "(none)" : out;
}

int GraphExecutor::InputIndexOrThrow(const std::string& name, const char* caller) const {
  int index = GetInputIndex(name);
  auto bound = bound_inputs_.find(name);
  if (index < 0 && bound != bound_inputs_.end()) {
    EMBER_LOG_FATAL << caller << ": input \"" << name << "\" was bound to " << bound->second
                    << " at compile time (emberc --bind) and is not an input of this artifact; "
                    << "compile again without --bind " << name << " to set it at run time";
  }
  if (index < 0) {
    EMBER_LOG_FATAL << caller << ": no input named \"" << name
                    << "\"; inputs are: " << InputNames();
  }
  return index;
}

const std::string& GraphExecutor::InputName(int index) const {
  return graph_.nodes[input_nodes_[static_cast<size_t>(index)]].name;
}

std::vector<int> GraphExecutor::DataInputs() const {
  std::vector<int> out;
  for (int i = 0; i < NumInputs(); ++i) {
    if (std::find(param_names_.begin(), param_names_.end(), InputName(i)) == param_names_.end()) {
      out.push_back(i);
    }
  }
  return out;
}

const DLTensor& GraphExecutor::InputTensor(int index) const {
  return data_entry_[InputEntry(index, "input")].get()->dl_tensor;
}

const DLTensor& GraphExecutor::OutputTensor(int index) const {
  return data_entry_[OutputEntry(index, "output")].get()->dl_tensor;
}

uint32_t GraphExecutor::InputEntry(int index, const char* caller) const {
  if (index < 0 || index >= NumInputs()) {
    EMBER_LOG_FATAL << caller << ": input index " << index << " is out of range; the graph has "
                    << NumInputs() << " inputs (" << InputNames() << ")";
  }
  return graph_.EntryId(input_nodes_[static_cast<size_t>(index)], 0);
}

uint32_t GraphExecutor::OutputEntry(int index, const char* caller) const {
  if (index < 0 || index >= NumOutputs()) {
    EMBER_LOG_FATAL << caller << ": output index " << index << " is out of range; the graph has "
                    << NumOutputs() << " outputs";
  }
  return outputs_[static_cast<size_t>(index)];
}

void GraphExecutor::CheckTensorMatches(uint32_t eid, const DLTensor* t,
                                       const std::string& what) const {
  EMBER_CHECK(t != nullptr) << what << ": the tensor is null";
  const DLTensor& mine = data_entry_[eid].get()->dl_tensor;
  bool same = t->dtype == mine.dtype && t->ndim == mine.ndim &&
              std::equal(mine.shape, mine.shape + mine.ndim, t->shape);
  if (!same) {
    EMBER_LOG_FATAL << what << ": expected " << Describe(&mine) << ", got " << Describe(t);
  }
  if (t->device.device_type != kDLCPU) {
    EMBER_LOG_FATAL << what << ": the tensor is on " << t->device << "; expected cpu";
  }
}

void GraphExecutor::SetEntryData(uint32_t eid, void* data) {
  for (DLTensor* t : entry_aliases_[eid]) t->data = data;
}

void GraphExecutor::MakeEntryWritable(uint32_t eid) {
  if (!entry_shared_[eid]) return;
  const DLTensor& t = data_entry_[eid].get()->dl_tensor;
  entry_owner_[eid] = NDArray::Empty(ShapeTuple(graph_.shape[eid]), t.dtype, devices_[0]);
  entry_owner_[eid].CopyFrom(&t);
  entry_home_[eid] = entry_owner_[eid].get()->dl_tensor.data;
  entry_shared_[eid] = false;
  SetEntryData(eid, entry_home_[eid]);
}

void GraphExecutor::SetInput(int index, const DLTensor* data) {
  CallGuard guard(this, "set_input");
  uint32_t eid = InputEntry(index, "set_input");
  CheckTensorMatches(eid, data, "set_input \"" + InputName(index) + "\"");
  // A shared param gets memory of its own before it is written; a zero-copied input goes back
  // to its own memory.
  if (entry_shared_[eid]) {
    MakeEntryWritable(eid);
  } else {
    SetEntryData(eid, entry_home_[eid]);
  }
  NDArray::CopyFromTo(data, &data_entry_[eid].get_mutable()->dl_tensor);
}

void GraphExecutor::SetInputZeroCopy(int index, const DLTensor* data) {
  CallGuard guard(this, "set_input_zero_copy");
  uint32_t eid = InputEntry(index, "set_input_zero_copy");
  std::string what = "set_input_zero_copy \"" + InputName(index) + "\"";
  CheckTensorMatches(eid, data, what);
  SetEntryData(eid, ZeroCopyAddress(data, what, "; use set_input to copy instead"));
}

void GraphExecutor::SetOutputZeroCopy(int index, const DLTensor* data) {
  CallGuard guard(this, "set_output_zero_copy");
  uint32_t eid = OutputEntry(index, "set_output_zero_copy");
  std::string what = "set_output_zero_copy " + std::to_string(index);
  CheckTensorMatches(eid, data, what);
  char* ptr = ZeroCopyAddress(data, what, "");
  if (entry_shared_[eid]) {
    EMBER_LOG_FATAL << what << ": this output is a param of the model; it cannot be redirected";
  }
  SetEntryData(eid, ptr);
}

NDArray GraphExecutor::GetInput(int index) const {
  CallGuard guard(this, "get_input");
  return data_entry_[InputEntry(index, "get_input")];
}

NDArray GraphExecutor::GetOutput(int index) const {
  CallGuard guard(this, "get_output");
  return data_entry_[OutputEntry(index, "get_output")];
}

void GraphExecutor::CopyOutputTo(int index, DLTensor* out) const {
  CallGuard guard(this, "get_output");
  uint32_t eid = OutputEntry(index, "get_output");
  CheckTensorMatches(eid, out, "get_output " + std::to_string(index));
  NDArray::CopyFromTo(&data_entry_[eid].get()->dl_tensor, out);
}

void GraphExecutor::LoadParams(const char* data, size_t size) {
  CallGuard guard(this, "load_params");
  NamedArrays params = ::ember::runtime::LoadParams(data, size, "load_params");
  for (const auto& [name, arr] : params) {
    int index = GetInputIndex(name);
    if (index < 0) continue;  // TVM's behaviour: params the graph does not use are skipped.
    SetInput(index, arr.operator->());
    if (std::find(param_names_.begin(), param_names_.end(), name) == param_names_.end()) {
      param_names_.push_back(name);
    }
  }
}

void GraphExecutor::ShareParams(const GraphExecutor& other, const char* data, size_t size) {
  CallGuard guard(this, "share_params");
  // Only the names are read; the arrays come from \p other.
  ByteReader r(data, size, "share_params");
  r.Read<uint64_t>("params magic");
  r.Read<uint64_t>("params reserved field");
  std::vector<std::string> names = r.ReadStringVector("param names");
  for (const std::string& name : names) {
    int index = GetInputIndex(name);
    int other_index = other.GetInputIndex(name);
    if (index < 0 || other_index < 0) continue;
    uint32_t eid = InputEntry(index, "share_params");
    uint32_t other_eid = other.InputEntry(other_index, "share_params");
    const NDArray& src = other.data_entry_[other_eid];
    CheckTensorMatches(eid, src.operator->(), "share_params \"" + name + "\"");
    entry_owner_[eid] = src;
    entry_home_[eid] = src->data;
    entry_shared_[eid] = true;
    SetEntryData(eid, src->data);
    if (std::find(param_names_.begin(), param_names_.end(), name) == param_names_.end()) {
      param_names_.push_back(name);
    }
  }
}

ObjectRef GraphExecutor::GetInputInfo() const {
  Map<String, ShapeTuple> shapes;
  Map<String, String> dtypes;
  for (uint32_t nid : input_nodes_) {
    const std::string& name = graph_.nodes[nid].name;
    if (std::find(param_names_.begin(), param_names_.end(), name) != param_names_.end()) continue;
    uint32_t eid = graph_.EntryId(nid, 0);
    shapes.Set(String(name), ShapeTuple(graph_.shape[eid]));
    dtypes.Set(String(name), String(graph_.dltype[eid]));
  }
  Map<String, ObjectRef> info;
  info.Set(String("shape"), shapes);
  info.Set(String("dtype"), dtypes);
  return info;
}

ObjectRef GraphExecutor::GetOutputInfo() const {
  Map<String, ShapeTuple> shapes;
  Map<String, String> dtypes;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    std::string name = "output_" + std::to_string(i);
    shapes.Set(String(name), ShapeTuple(graph_.shape[outputs_[i]]));
    dtypes.Set(String(name), String(graph_.dltype[outputs_[i]]));
  }
  Map<String, ObjectRef> info;
  info.Set(String("shape"), shapes);
  info.Set(String("dtype"), dtypes);
  return info;
}

}  // namespace ember::runtime
