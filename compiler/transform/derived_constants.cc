#include "transform/derived_constants.h"

namespace ember {
namespace compiler {

int DerivedConstants::Get(int source, const std::string& suffix, const std::string& params,
                          const std::function<HostTensorPtr()>& make) {
  const auto key = std::make_tuple(source, suffix, params);
  if (auto it = made_.find(key); it != made_.end()) return it->second;
  HostTensorPtr data = make();
  if (data == nullptr) return -1;
  const int id =
      graph_->AddConstant(graph_->UniqueName(graph_->value(source).name + suffix), std::move(data));
  made_[key] = id;
  return id;
}

}  // namespace compiler
}  // namespace ember
