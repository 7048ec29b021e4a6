#include "frontend/onnx/onnx_bind_inputs.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <unordered_set>

#include "frontend/onnx/onnx_dtype.h"

namespace ember {
namespace compiler {
namespace {

std::vector<double> ParseValues(const std::string& name, const std::string& text) {
  std::vector<double> values;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
      throw CompileError("--bind " + name + ": '" + item + "' is not a finite number");
    }
    values.push_back(v);
  }
  if (values.empty()) throw CompileError("--bind " + name + ": no value given");
  return values;
}

// Whether the whole number v is in the range of the integer (or bool) type.
bool FitsInteger(DLDataType dtype, double v) {
  if (dtype.bits >= 64) return std::fabs(v) < 9.2e18 && (dtype.code != kDLUInt || v >= 0);
  const double span = std::ldexp(1.0, dtype.bits);
  if (dtype.code == kDLUInt) return v >= 0 && v < span;  // bool is uint1
  return v >= -span / 2 && v < span / 2;
}

std::string InputList(const onnx::GraphProto& g, const std::unordered_set<std::string>& inits) {
  std::string list;
  for (const auto& in : g.input()) {
    if (!inits.count(in.name())) list += (list.empty() ? "" : ", ") + in.name();
  }
  return list.empty() ? "(none)" : list;
}

}  // namespace

std::vector<BoundInput> BindInputs(onnx::ModelProto* model, const std::string& source,
                                   const std::map<std::string, std::string>& bindings) {
  std::vector<BoundInput> bound;
  if (bindings.empty()) return bound;
  onnx::GraphProto* graph = model->mutable_graph();
  std::unordered_set<std::string> inits;
  for (const auto& t : graph->initializer()) inits.insert(t.name());
  for (const auto& [name, text] : bindings) {
    int index = -1;
    for (int i = 0; i < graph->input_size(); ++i) {
      if (graph->input(i).name() == name && !inits.count(name)) index = i;
    }
    if (index < 0) {
      throw CompileError("--bind " + name + ": " + source + " has no input named '" + name +
                         "'; inputs are: " + InputList(*graph, inits));
    }
    const auto& tt = graph->input(index).type().tensor_type();
    BoundInput b;
    b.name = name;
    b.value = text;
    b.type.dtype = OnnxToDType(tt.elem_type(), "--bind " + name);
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) {
        throw CompileError("--bind " + name + ": the input's shape is dynamic; give it with " +
                           "--input-shape " + name + "=d0,d1,...");
      }
      b.type.shape.push_back(d.dim_value());
    }
    const std::vector<double> values = ParseValues(name, text);
    const int64_t count = b.type.NumElements();
    if (static_cast<int64_t>(values.size()) != count && values.size() != 1) {
      throw CompileError("--bind " + name + ": the input " + b.type.ToString() + " holds " +
                         std::to_string(count) + " values, got " + std::to_string(values.size()));
    }
    HostTensor data;
    data.type = b.type;
    data.data.assign(static_cast<size_t>(b.type.ByteSize()), 0);
    for (int64_t i = 0; i < count; ++i) {
      const double v = values[values.size() == 1 ? 0 : static_cast<size_t>(i)];
      if (b.type.dtype.code == kDLFloat) {
        data.SetFromDouble(i, v);
      } else if (v != std::trunc(v) || !FitsInteger(b.type.dtype, v)) {
        throw CompileError("--bind " + name + ": " + std::to_string(v) +
                           " is not a value of the input's type " + DTypeToString(b.type.dtype));
      } else {
        data.SetFromInt(i, static_cast<int64_t>(v));
      }
    }
    onnx::TensorProto* init = graph->add_initializer();
    init->set_name(name);
    init->set_data_type(tt.elem_type());
    for (int64_t d : b.type.shape) init->add_dims(d);
    init->set_raw_data(std::string(data.data.begin(), data.data.end()));
    graph->mutable_input()->DeleteSubrange(index, 1);
    bound.push_back(std::move(b));
  }
  return bound;
}

}  // namespace compiler
}  // namespace ember
