#include "transform/derived_constants.h"

namespace ember {
namespace compiler {

int DerivedConstants::Get(int source, const std::string& suffix, const std::string& params,
                          const std::function<HostTensorPtr()>& make) {
  const auto key = std::make_tuple(source, suffix, params);
  if (auto it = made_.find(key); it != made_.end()) return it->second;
  HostTensorPtr data = make();
  if (data == nullptr) return -1;
  // The name is copied first: AddConstant may grow the values and move the source's.
  const std::string name = graph_->value(source).name + suffix;
  const int id = graph_->AddConstant(graph_->UniqueName(name), std::move(data));
  made_[key] = id;
  return id;
}

}  // namespace compiler
}  // namespace ember
