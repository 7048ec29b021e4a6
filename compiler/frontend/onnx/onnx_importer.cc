// ONNX -> graph IR. Checking, conversion and shape inference happen first (onnx_model_check.h);
// this file only maps protobuf structures to the IR and then canonicalizes (transform.h).
#include <ember/compiler/frontend.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>
#include <onnx/onnx_pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "frontend/onnx/onnx_dtype.h"
#include "frontend/onnx/onnx_model_check.h"

namespace ember {
namespace compiler {
namespace {

// Ops the importer or canonicalizer consume themselves (no registry entry needed).
bool HandledByFrontend(const std::string& op) {
  static const char* kOps[] = {"Constant", "Shape",    "Size",     "ConstantOfShape",
                               "Range",    "CastLike", "Upsample", "Sum",
                               "Mean",     "Max",      "Min"};
  for (const char* o : kOps) {
    if (op == o) return true;
  }
  return false;
}

HostTensorPtr TensorFromProto(const onnx::TensorProto& t, const std::string& where) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    throw UnsupportedError(where + ": tensor '" + t.name() +
                           "' uses external data, which emberc does not read");
  }
  TensorType type;
  type.dtype = OnnxToDType(t.data_type(), where + ": tensor '" + t.name() + "'");
  for (int64_t d : t.dims()) {
    if (d < 0) throw CompileError(where + ": tensor '" + t.name() + "' has a negative dimension");
    type.shape.push_back(d);
  }
  constexpr int64_t kMaxConstantElements = int64_t{1} << 31;
  int64_t n = 1;
  for (int64_t d : type.shape) {
    if (d != 0 && n > kMaxConstantElements / d) {
      throw CompileError(where + ": tensor '" + t.name() + "' is implausibly large");
    }
    n *= d;
  }
  auto out = std::make_shared<HostTensor>();
  out->type = type;
  size_t bytes = static_cast<size_t>(type.ByteSize());
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes) {
      throw CompileError(where + ": tensor '" + t.name() + "' raw_data has " +
                         std::to_string(t.raw_data().size()) + " bytes, expected " +
                         std::to_string(bytes) + " for " + type.ToString());
    }
    out->data.assign(t.raw_data().begin(), t.raw_data().end());
    return out;
  }
  out->data.assign(bytes, 0);
  auto check_count = [&](int count) {
    if (count != n) {
      throw CompileError(where + ": tensor '" + t.name() + "' holds " + std::to_string(count) +
                         " values, expected " + std::to_string(n) + " for " + type.ToString());
    }
  };
  DLDataType d = type.dtype;
  if (d == kFloat32) {
    check_count(t.float_data_size());
    for (int64_t i = 0; i < n; ++i) out->SetFromDouble(i, t.float_data(static_cast<int>(i)));
  } else if (d == kFloat64) {
    check_count(t.double_data_size());
    for (int64_t i = 0; i < n; ++i) out->SetFromDouble(i, t.double_data(static_cast<int>(i)));
  } else if (d == kInt64) {
    check_count(t.int64_data_size());
    for (int64_t i = 0; i < n; ++i) out->SetFromInt(i, t.int64_data(static_cast<int>(i)));
  } else if (d == kUInt32 || d == kUInt64) {
    check_count(t.uint64_data_size());
    for (int64_t i = 0; i < n; ++i) {
      out->SetFromInt(i, static_cast<int64_t>(t.uint64_data(static_cast<int>(i))));
    }
  } else if (d == kFloat16) {
    check_count(t.int32_data_size());
    uint16_t* p = out->Data<uint16_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
  } else {
    check_count(t.int32_data_size());
    for (int64_t i = 0; i < n; ++i) out->SetFromInt(i, t.int32_data(static_cast<int>(i)));
  }
  return out;
}

AttrValue AttrFromProto(const onnx::AttributeProto& a, const Node& node) {
  switch (a.type()) {
    case onnx::AttributeProto::INT:
      return a.i();
    case onnx::AttributeProto::FLOAT:
      return static_cast<double>(a.f());
    case onnx::AttributeProto::STRING:
      return a.s();
    case onnx::AttributeProto::INTS:
      return std::vector<int64_t>(a.ints().begin(), a.ints().end());
    case onnx::AttributeProto::FLOATS:
      return std::vector<double>(a.floats().begin(), a.floats().end());
    case onnx::AttributeProto::STRINGS:
      return std::vector<std::string>(a.strings().begin(), a.strings().end());
    case onnx::AttributeProto::TENSOR:
      return TensorFromProto(a.t(), node.Describe());
    default:
      throw UnsupportedError(node.Describe() + ": attribute '" + a.name() +
                             "' has a kind emberc does not support (graph/sparse/type attributes)");
  }
}

// Value of a Constant node (value, value_float(s), value_int(s)).
HostTensorPtr ConstantNodeValue(const Node& n) {
  if (n.HasAttr("value")) return n.GetTensor("value");
  if (n.HasAttr("value_float")) return MakeScalarTensor(kFloat32, n.GetFloat("value_float"));
  if (n.HasAttr("value_int"))
    return MakeScalarTensor(kInt64, static_cast<double>(n.GetInt("value_int")));
  if (n.HasAttr("value_ints")) return MakeInt64Tensor(n.GetInts("value_ints"));
  if (n.HasAttr("value_floats")) {
    auto v = n.GetFloats("value_floats");
    auto t = std::make_shared<HostTensor>(TensorType{{static_cast<int64_t>(v.size())}, kFloat32});
    for (size_t i = 0; i < v.size(); ++i) t->SetFromDouble(static_cast<int64_t>(i), v[i]);
    return t;
  }
  throw UnsupportedError(n.Describe() + ": only value/value_float(s)/value_int(s) are supported");
}

Graph ImportModel(onnx::ModelProto model, const std::string& source, const ImportOptions& options) {
  int64_t opset = PrepareOnnxModel(&model, source, options);

  const onnx::GraphProto& gp = model.graph();
  Graph g;
  g.name = gp.name().empty() ? "main" : gp.name();
  std::unordered_map<std::string, int> by_name;
  for (const auto& init : gp.initializer()) {
    by_name[init.name()] = g.AddConstant(init.name(), TensorFromProto(init, source));
  }
  for (const auto& in : gp.input()) {
    if (by_name.count(in.name())) continue;  // an initializer: a constant, not a runtime input
    const auto& tt = in.type().tensor_type();
    TensorType type;
    type.dtype = OnnxToDType(tt.elem_type(), source + ": input '" + in.name() + "'");
    for (const auto& d : tt.shape().dim()) type.shape.push_back(d.dim_value());
    int id = g.AddValue(in.name(), type);
    by_name[in.name()] = id;
    g.inputs().push_back(id);
  }
  int unnamed = 0;
  for (const auto& np : gp.node()) {
    Node n;
    n.op = np.op_type();
    n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(unnamed++) : np.name();
    if (!np.domain().empty() && np.domain() != "ai.onnx") {
      throw UnsupportedError(source + ": " + n.Describe() + ": operator domain '" + np.domain() +
                             "' is not supported (only ai.onnx, opset " + std::to_string(opset) +
                             ")");
    }
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    if (!HandledByFrontend(n.op) && (!def || !def->infer_type())) {
      throw UnsupportedError(source + ": operator '" + n.op + "' (node '" + n.name + "', opset " +
                             std::to_string(opset) + ") is not supported by emberc");
    }
    for (const auto& a : np.attribute()) n.attrs[a.name()] = AttrFromProto(a, n);
    for (const auto& in : np.input()) {
      if (in.empty()) {
        n.inputs.push_back(kAbsentValue);
        continue;
      }
      auto it = by_name.find(in);
      if (it == by_name.end()) {
        throw CompileError(source + ": " + n.Describe() + " reads '" + in +
                           "', which nothing defines");
      }
      n.inputs.push_back(it->second);
    }
    if (n.op == "Constant") {
      HostTensorPtr c = ConstantNodeValue(n);
      by_name[np.output(0)] = g.AddConstant(np.output(0), c);
      continue;
    }
    for (const auto& out : np.output()) {
      if (out.empty()) {
        n.outputs.push_back(g.AddValue(g.UniqueName(n.name + "_unused"), TensorType{}));
        continue;
      }
      int id = g.AddValue(out, TensorType{});
      by_name[out] = id;
      n.outputs.push_back(id);
    }
    g.nodes().push_back(std::move(n));
  }
  // Fully static types the model declares (after ONNX shape inference).
  auto declare = [&](const onnx::ValueInfoProto& vi) {
    auto it = by_name.find(vi.name());
    if (it == by_name.end() || !vi.type().has_tensor_type()) return;
    const auto& tt = vi.type().tensor_type();
    if (!tt.has_shape()) return;
    TensorType t;
    try {
      t.dtype = OnnxToDType(tt.elem_type(), vi.name());
    } catch (const CompileError&) {
      return;
    }
    for (const auto& d : tt.shape().dim()) {
      if (!d.has_dim_value()) return;
      t.shape.push_back(d.dim_value());
    }
    g.declared_types[it->second] = t;
  };
  for (const auto& vi : gp.value_info()) declare(vi);
  for (const auto& vi : gp.output()) declare(vi);
  for (const auto& out : gp.output()) {
    auto it = by_name.find(out.name());
    if (it == by_name.end()) {
      throw CompileError(source + ": graph output '" + out.name() +
                         "' is not produced by any node");
    }
    g.outputs().push_back(it->second);
  }
  try {
    Canonicalize(&g, opset);
  } catch (const UnsupportedError& e) {
    throw UnsupportedError(source + ": " + e.what() + " (opset " + std::to_string(opset) + ")");
  } catch (const CompileError& e) {
    throw CompileError(source + ": " + e.what());
  }
  return g;
}

}  // namespace

Graph ImportOnnxBytes(const std::string& bytes, const std::string& source,
                      const ImportOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    throw CompileError(source + ": not a valid ONNX model (protobuf parsing failed)");
  }
  if (!model.has_graph()) throw CompileError(source + ": not a valid ONNX model (no graph)");
  return ImportModel(std::move(model), source, options);
}

Graph ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw CompileError(path + ": is a directory; give the model's .onnx file");
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) throw CompileError(path + ": cannot open file: " + std::strerror(errno));
  std::ostringstream ss;
  ss << f.rdbuf();
  return ImportOnnxBytes(ss.str(), path, options);
}

std::pair<std::string, std::vector<int64_t>> ParseInputShape(const std::string& spec) {
  auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw CompileError("--input-shape: expected NAME=d0,d1,..., got '" + spec + "'");
  }
  std::string name = spec.substr(0, eq);
  std::vector<int64_t> dims;
  std::string rest = spec.substr(eq + 1);
  std::stringstream ss(rest);
  std::string tok;
  while (std::getline(ss, tok, ',')) {
    try {
      size_t used = 0;
      long long v = std::stoll(tok, &used);
      if (used != tok.size() || v < 0) throw std::invalid_argument("bad");
      dims.push_back(v);
    } catch (const std::exception&) {
      throw CompileError("--input-shape " + name + ": '" + tok + "' is not a dimension (want a " +
                         "non-negative integer)");
    }
  }
  return {name, dims};
}

}  // namespace compiler
}  // namespace ember
