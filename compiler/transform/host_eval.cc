// HostEvaluate: a node on constant inputs, evaluated by its op's registered fold (OpDef::fold,
// beside the compute rules in ops/*_fold.cc), for shape math and cheap weight preprocessing.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

namespace ember {
namespace compiler {

bool HostEvaluate(const Node& n, const std::vector<HostTensorPtr>& in,
                  const std::vector<TensorType>& out_types, std::vector<HostTensorPtr>* outputs) {
  for (const auto& t : out_types) {
    if (t.NumElements() > kMaxFoldElements) return false;
  }
  const OpDef* def = OpRegistry::Global()->Find(n.op);
  if (def != nullptr && def->fold()) {
    std::vector<HostTensorPtr> folded = def->fold()(n, in, out_types);
    if (!folded.empty()) {
      *outputs = std::move(folded);
      return true;
    }
  }
  // An empty result of a one- or two-input op needs no evaluator: there is nothing to compute.
  if ((in.size() == 1 || in.size() == 2) && out_types.at(0).NumElements() == 0) {
    outputs->assign({std::make_shared<HostTensor>(out_types[0])});
    return true;
  }
  return false;
}

}  // namespace compiler
}  // namespace ember
