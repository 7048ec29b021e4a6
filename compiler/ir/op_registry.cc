#include <ember/compiler/ir/op_registry.h>

namespace ember {
namespace compiler {

const char* OpPatternName(OpPattern p) {
  switch (p) {
    case OpPattern::kElemWise:
      return "elemwise";
    case OpPattern::kBroadcast:
      return "broadcast";
    case OpPattern::kInjective:
      return "injective";
    case OpPattern::kCommReduce:
      return "reduce";
    case OpPattern::kOutEWiseFusable:
      return "out-elemwise-fusable";
    case OpPattern::kOpaque:
      return "opaque";
  }
  return "?";
}

OpRegistry* OpRegistry::Global() {
  static OpRegistry registry;
  return &registry;
}

OpDef& OpRegistry::Mutable(const std::string& name) {
  auto& slot = ops_[name];
  if (!slot) slot = std::make_unique<OpDef>(name);
  return *slot;
}

const OpDef* OpRegistry::Find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<std::string> OpRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) {
    if (def->infer_type()) names.push_back(name);
  }
  return names;
}

std::vector<TensorType> InferNodeTypes(const Node& node, const std::vector<TensorType>& inputs) {
  const OpDef* def = OpRegistry::Global()->Find(node.op);
  if (!def || !def->infer_type()) {
    throw UnsupportedError(node.Describe() + ": operator '" + node.op +
                           "' is not supported by emberc");
  }
  int n = static_cast<int>(node.inputs.size());
  if (n < def->min_inputs() || n > def->max_inputs()) {
    throw CompileError(node.Describe() + ": expected " + std::to_string(def->min_inputs()) +
                       (def->max_inputs() != def->min_inputs()
                            ? ".." + std::to_string(def->max_inputs())
                            : std::string()) +
                       " inputs, got " + std::to_string(n));
  }
  return def->infer_type()(node, inputs);
}

}  // namespace compiler
}  // namespace ember
