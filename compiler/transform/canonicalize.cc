// Canonicalize: the frontend's second half. Walks nodes in order, rewriting each into the canonical
// form of ir/canonical_ops.h by its op's registered rule (OpDef::canonicalize, canonical_*.cc),
// then inferring types and folding what is constant.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/subgraph.h>
#include <ember/compiler/transform.h>

#include <cstring>

#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

using Types = std::vector<TensorType>;

class Canonicalizer : public CanonicalizeContext {
 public:
  // RewriteContext, for the ops' rules (canonical_*.cc, recurrent.cc).
  Graph& graph() override { return g_; }
  int Emit(const std::string& op, const std::string& name, std::vector<int> inputs,
           AttrMap attrs) override {
    return EmitNew(op, name, std::move(inputs), std::move(attrs));
  }
  void EmitInto(Node node) override { Emit(std::move(node)); }

  int64_t opset() const override { return opset_; }
  const KernelStrategy* strategy() const override { return strategy_; }
  void Canonicalize(Node node) override { Visit(std::move(node)); }
  std::vector<Node> CanonicalizeApart(std::vector<Node> nodes) override {
    std::vector<Node> outer;
    outer.swap(g_.nodes());
    try {
      for (Node& n : nodes) Visit(std::move(n));
    } catch (...) {
      g_.nodes().swap(outer);
      throw;
    }
    g_.nodes().swap(outer);
    return outer;
  }
  void EmitTyped(Node node) override { g_.nodes().push_back(std::move(node)); }

  Canonicalizer(Graph* g, int64_t opset, const KernelStrategy* strategy)
      : g_(*g), opset_(opset), strategy_(strategy) {}

  void Run() {
    std::vector<Node> old;
    old.swap(g_.nodes());
    for (Node& n : old) Visit(std::move(n));
  }

 private:
  void Emit(Node n) {
    Types in;
    for (int id : n.inputs) in.push_back(id == kAbsentValue ? TensorType{} : TypeOf(id));
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    if (def) {
      for (const auto& [k, v] : def->attr_defaults()) {
        if (!n.HasAttr(k)) n.attrs[k] = v;
      }
    }
    Types out = InferNodeTypes(n, in);
    for (size_t i = 0; i < n.outputs.size() && i < out.size(); ++i) {
      g_.value(n.outputs[i]).type = out[i];
    }
    bool all_const = true;
    std::vector<HostTensorPtr> cin;
    for (int id : n.inputs) {
      if (id == kAbsentValue) continue;
      if (!g_.value(id).is_constant()) all_const = false;
      cin.push_back(g_.value(id).constant);
    }
    std::vector<HostTensorPtr> folded;
    if (all_const && !cin.empty() && HostEvaluate(n, cin, out, &folded)) {
      for (size_t i = 0; i < folded.size(); ++i) SetConstOutput(n.outputs[i], folded[i]);
      return;
    }
    g_.nodes().push_back(std::move(n));
  }

  // A fresh intermediate value + node, emitted immediately.
  int EmitNew(const std::string& op, const std::string& name, std::vector<int> inputs,
              AttrMap attrs = {}) {
    int out = g_.AddValue(g_.UniqueName(name), TensorType{});
    Emit(Node{op, name, std::move(attrs), std::move(inputs), {out}});
    return out;
  }

  void Visit(Node n);

  Graph& g_;
  int64_t opset_;
  const KernelStrategy* strategy_;
};

void Canonicalizer::Visit(Node n) {
  const std::string& op = n.op;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] != kAbsentValue && TypeOf(n.inputs[i]).dtype.bits == 0) {
      NodeError(n, "input " + std::to_string(i) + " has no type");
    }
  }
  const OpDef* def = OpRegistry::Global()->Find(op);
  if (def != nullptr && def->canonicalize()) {
    def->canonicalize()(std::move(n), this);
    return;
  }
  Emit(std::move(n));
}

}  // namespace

HostTensorPtr CanonicalizeContext::ConstInput(const Node& n, size_t i, const char* what) {
  if (!n.HasInput(i)) return nullptr;
  const Value& v = graph().value(n.inputs[i]);
  if (!v.is_constant()) {
    NodeUnsupported(n, std::string("input ") + std::to_string(i) + " ('" + what + "', value '" +
                           v.name + "') must be a constant: emberc compiles static shapes");
  }
  return v.constant;
}

HostTensorPtr CanonicalizeContext::RequiredConstInput(const Node& n, size_t i, const char* what) {
  if (!n.HasInput(i)) {
    NodeError(n, std::string("input ") + std::to_string(i) + " ('" + what + "') is required");
  }
  return ConstInput(n, i, what);
}

HostTensorPtr CanonicalizeContext::OneValueInput(const Node& n, size_t i, const char* what) {
  HostTensorPtr c = ConstInput(n, i, what);
  if (!c || c->NumElements() != 1) {
    NodeError(n, std::string("input ") + std::to_string(i) + " ('" + what +
                     "') must hold one value, got " + (c ? c->type.ToString() : "none"));
  }
  return c;
}

void CanonicalizeContext::CheckConstantIndices(const Node& n, size_t input, int64_t extent,
                                               const std::string& what, int64_t first,
                                               int64_t step) {
  const Value& indices = graph().value(n.inputs.at(input));
  if (!indices.is_constant()) return;
  for (int64_t i = first; i < indices.constant->NumElements(); i += step) {
    const int64_t k = indices.constant->GetAsInt(i);
    if (k < -extent || k >= extent) {
      NodeError(n, "index " + std::to_string(k) + " (element " + std::to_string(i) +
                       " of indices '" + indices.name + "') is out of range for " + what +
                       " of size " + std::to_string(extent) +
                       "; valid: " + std::to_string(-extent) + ".." + std::to_string(extent - 1));
    }
  }
}

void CanonicalizeContext::IntsInputToAttr(Node& n, size_t i, const char* key) {
  if (auto c = ConstInput(n, i, key)) n.attrs[key] = c->ToIntVector();
}

void CanonicalizeContext::DropInputsFrom(Node& n, size_t keep) {
  if (n.inputs.size() > keep) n.inputs.resize(keep);
}

void CanonicalizeContext::SetFilledOutput(const Node& n, int id, const std::vector<int64_t>& shape,
                                          const HostTensor& value) {
  if (value.NumElements() < 1) NodeError(n, "the fill value is empty");
  for (int64_t d : shape) {
    if (d < 0) NodeError(n, "output shape " + ShapeToString(shape) + " has a negative dimension");
  }
  const int64_t bytes = DTypeBytes(value.type.dtype);
  auto element = std::make_shared<HostTensor>(TensorType{{1}, value.type.dtype});
  std::memcpy(element->data.data(), value.data.data(), static_cast<size_t>(bytes));
  const TensorType type{shape, value.type.dtype};
  if (type.NumElements() > kMaxFoldElements) {
    Canonicalize(Node{
        "Expand",
        n.name,
        {},
        {Constant(n.name + "_fill", element), Constant(n.name + "_shape", MakeInt64Tensor(shape))},
        {id}});
    return;
  }
  auto t = std::make_shared<HostTensor>(type);
  for (int64_t i = 0; i < t->NumElements(); ++i) {
    std::memcpy(t->data.data() + i * bytes, element->data.data(), static_cast<size_t>(bytes));
  }
  SetConstOutput(id, t);
}

void CanonicalizeContext::SetConstOutput(int id, HostTensorPtr c) {
  Value& v = graph().value(id);
  v.type = c->type;
  v.constant = std::move(c);
}

void Canonicalize(Graph* graph, int64_t opset, const KernelStrategy* strategy) {
  Canonicalizer(graph, opset, strategy).Run();
}

}  // namespace compiler
}  // namespace ember
