// ONNX -> graph IR. Checking, conversion and shape inference happen first (onnx_model_check.h);
// this file only maps protobuf structures to the IR and then canonicalizes (transform.h).
#include <ember/compiler/frontend.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/subgraph.h>
#include <ember/compiler/transform.h>
#include <onnx/onnx_pb.h>

#include <sstream>
#include <unordered_map>

#include "frontend/onnx/onnx_dtype.h"
#include "frontend/onnx/onnx_model_check.h"

namespace ember {
namespace compiler {
namespace {

// Ops the importer or canonicalizer consume themselves (no registry entry needed).
// The com.microsoft ops ONNX Runtime's quantizer writes in QOperator models, which emberc
// expands (compiler/transform/canonical_quantized.cc).
bool IsOnnxRuntimeQuantizedOp(const std::string& op) {
  return op == "QLinearAdd" || op == "QLinearMul" || op == "QLinearSigmoid" ||
         op == "QLinearGlobalAveragePool";
}

bool HandledByFrontend(const std::string& op) {
  if (IsOnnxRuntimeQuantizedOp(op)) return true;
  static const char* kOps[] = {"Constant",
                               "Shape",
                               "Size",
                               "ConstantOfShape",
                               "Range",
                               "CastLike",
                               "Upsample",
                               "Sum",
                               "Mean",
                               "Max",
                               "Min",
                               "If",
                               "Loop",
                               "LSTM",
                               "GRU",
                               "RNN",
                               "QuantizeLinear",
                               "DequantizeLinear",
                               "DynamicQuantizeLinear",
                               "ConvInteger",
                               "MatMulInteger",
                               "QLinearConv",
                               "QLinearMatMul"};
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

// Reads a GraphProto's nodes into a Graph, and graph attributes (If's branches, Loop's body)
// into Subgraphs over the same value table. Names resolve innermost scope first, as ONNX scopes
// them: a subgraph may read any value its enclosing graphs defined before it.
class GraphReader {
 public:
  GraphReader(Graph* g, std::string source, int64_t opset)
      : g_(*g), source_(std::move(source)), opset_(opset) {}

  void ReadMain(const onnx::GraphProto& gp) {
    scopes_.emplace_back();
    for (const auto& init : gp.initializer()) {
      Define(init.name(), g_.AddConstant(init.name(), TensorFromProto(init, source_)));
    }
    for (const auto& in : gp.input()) {
      if (Lookup(in.name()) >= 0) continue;  // an initializer: a constant, not a runtime input
      const int id = g_.AddValue(in.name(), DeclaredType(in, "input '" + in.name() + "'"));
      Define(in.name(), id);
      g_.inputs().push_back(id);
    }
    g_.nodes() = ReadNodes(gp);
    for (const auto& vi : gp.value_info()) Declare(vi);
    for (const auto& vi : gp.output()) Declare(vi);
    for (const auto& out : gp.output()) {
      const int id = Lookup(out.name());
      if (id < 0) {
        throw CompileError(source_ + ": graph output '" + out.name() +
                           "' is not produced by any node");
      }
      g_.outputs().push_back(id);
    }
  }

 private:
  int Lookup(const std::string& name) const {
    for (auto scope = scopes_.rbegin(); scope != scopes_.rend(); ++scope) {
      auto it = scope->find(name);
      if (it != scope->end()) return it->second;
    }
    return -1;
  }
  void Define(const std::string& name, int id) { scopes_.back()[name] = id; }
  bool Nested() const { return scopes_.size() > 1; }
  // Names defined inside a subgraph may repeat across branches; the value table keeps them apart.
  std::string ValueName(const std::string& name) { return Nested() ? g_.UniqueName(name) : name; }

  TensorType DeclaredType(const onnx::ValueInfoProto& vi, const std::string& what) {
    const auto& tt = vi.type().tensor_type();
    TensorType type;
    type.dtype = OnnxToDType(tt.elem_type(), source_ + ": " + what);
    for (const auto& d : tt.shape().dim()) type.shape.push_back(d.dim_value());
    return type;
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
      case onnx::AttributeProto::GRAPH:
        return ReadSubgraph(a.g(), node.Describe() + " attribute '" + a.name() + "'");
      default:
        throw UnsupportedError(node.Describe() + ": attribute '" + a.name() +
                               "' has a kind emberc does not support (sparse/type attributes, "
                               "lists of graphs)");
    }
  }

  SubgraphPtr ReadSubgraph(const onnx::GraphProto& gp, const std::string& where) {
    auto sub = std::make_shared<Subgraph>();
    sub->name = where;
    scopes_.emplace_back();
    for (const auto& init : gp.initializer()) {
      Define(init.name(), g_.AddConstant(ValueName(init.name()), TensorFromProto(init, source_)));
    }
    for (const auto& in : gp.input()) {
      if (scopes_.back().count(in.name())) continue;
      const int id = g_.AddValue(ValueName(in.name()), TensorType{});
      Define(in.name(), id);
      sub->inputs.push_back(id);
    }
    sub->nodes = ReadNodes(gp);
    for (const auto& out : gp.output()) {
      const int id = Lookup(out.name());
      if (id < 0) {
        throw CompileError(source_ + ": " + where + ": output '" + out.name() +
                           "' is not produced by any node");
      }
      sub->outputs.push_back(id);
    }
    scopes_.pop_back();
    return sub;
  }

  std::vector<Node> ReadNodes(const onnx::GraphProto& gp) {
    std::vector<Node> nodes;
    for (const auto& np : gp.node()) {
      Node n;
      n.op = np.op_type();
      n.name = np.name().empty() ? np.op_type() + "_" + std::to_string(unnamed_++) : np.name();
      if (!np.domain().empty() && np.domain() != "ai.onnx" &&
          !(np.domain() == "com.microsoft" && IsOnnxRuntimeQuantizedOp(n.op))) {
        throw UnsupportedError(source_ + ": " + n.Describe() + ": operator domain '" + np.domain() +
                               "' is not supported (only ai.onnx, opset " + std::to_string(opset_) +
                               ", and ONNX Runtime's com.microsoft QLinearAdd, QLinearMul, "
                               "QLinearSigmoid and QLinearGlobalAveragePool)");
      }
      const OpDef* def = OpRegistry::Global()->Find(n.op);
      // An op with a canonical form but no shape rule is rewritten into others (Scatter).
      if (!HandledByFrontend(n.op) && (!def || (!def->infer_type() && !def->canonicalize()))) {
        throw UnsupportedError(source_ + ": operator '" + n.op + "' (node '" + n.name +
                               "', opset " + std::to_string(opset_) +
                               ") is not supported by emberc");
      }
      for (const auto& in : np.input()) {
        if (in.empty()) {
          n.inputs.push_back(kAbsentValue);
          continue;
        }
        const int id = Lookup(in);
        if (id < 0) {
          throw CompileError(source_ + ": " + n.Describe() + " reads '" + in +
                             "', which nothing defines");
        }
        n.inputs.push_back(id);
      }
      for (const auto& a : np.attribute()) n.attrs[a.name()] = AttrFromProto(a, n);
      if (n.op == "Constant") {
        Define(np.output(0), g_.AddConstant(ValueName(np.output(0)), ConstantNodeValue(n)));
        continue;
      }
      for (const auto& out : np.output()) {
        if (out.empty()) {
          n.outputs.push_back(g_.AddValue(g_.UniqueName(n.name + "_unused"), TensorType{}));
          continue;
        }
        const int id = g_.AddValue(ValueName(out), TensorType{});
        Define(out, id);
        n.outputs.push_back(id);
      }
      nodes.push_back(std::move(n));
    }
    return nodes;
  }

  // Fully static types the model declares (after ONNX shape inference).
  void Declare(const onnx::ValueInfoProto& vi) {
    const int id = Lookup(vi.name());
    if (id < 0 || !vi.type().has_tensor_type()) return;
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
    g_.declared_types[id] = t;
  }

  Graph& g_;
  const std::string source_;
  const int64_t opset_;
  std::vector<std::unordered_map<std::string, int>> scopes_;  // innermost last
  int unnamed_ = 0;
};

Graph ImportModel(onnx::ModelProto model, const std::string& source, const ImportOptions& options) {
  std::vector<BoundInput> bound;
  const int64_t opset = PrepareOnnxModel(&model, source, options, &bound);

  const onnx::GraphProto& gp = model.graph();
  Graph g;
  g.name = gp.name().empty() ? "main" : gp.name();
  g.bound_inputs = std::move(bound);
  GraphReader reader(&g, source, opset);
  reader.ReadMain(gp);
  try {
    const FuseQdqStats fused = FuseQdq(&g);
    if (options.log != nullptr &&
        fused.qlinear_conv + fused.qlinear_matmul + fused.float_result + fused.max_pool > 0) {
      *options.log << "emberc: fuse_qdq: " << fused.qlinear_conv << " QLinearConv, "
                   << fused.qlinear_matmul << " QLinearMatMul, " << fused.float_result
                   << " with a float result (integer products), " << fused.max_pool
                   << " MaxPool on bytes\n";
    }
    Canonicalize(&g, opset, options.strategy);
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
  return ImportModel(ParseOnnxModel(bytes, source), source, options);
}

Graph ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  return ImportModel(ReadOnnxModelFile(path), path, options);
}

std::pair<std::string, std::string> ParseBinding(const std::string& spec) {
  const auto eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    throw CompileError(
        "--bind: expected NAME=VALUE (VALUE: a number, or comma-separated "
        "numbers for a tensor), got '" +
        spec + "'");
  }
  return {spec.substr(0, eq), spec.substr(eq + 1)};
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
