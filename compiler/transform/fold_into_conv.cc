#include "transform/fold_into_conv.h"

#include <memory>

namespace ember {
namespace compiler {

bool FoldChannelAffineIntoConv(Graph* g, Node* conv, const std::vector<double>& scale,
                               const std::vector<double>& shift, const std::string& suffix) {
  const Value& w = g->value(conv->inputs[1]);
  if (!w.is_constant() || w.type.dtype != kFloat32 ||
      w.type.shape[0] != static_cast<int64_t>(scale.size())) {
    return false;
  }
  if (conv->HasInput(2) && !g->value(conv->inputs[2]).is_constant()) return false;
  auto nw = std::make_shared<HostTensor>(*w.constant);
  int64_t per = nw->NumElements() / w.type.shape[0];
  float* wp = nw->Data<float>();  // float32 checked above; per-element dispatch is too slow here
  for (int64_t i = 0; i < nw->NumElements(); ++i) {
    wp[i] = static_cast<float>(wp[i] * scale[static_cast<size_t>(i / per)]);
  }
  auto nb = std::make_shared<HostTensor>(TensorType{{w.type.shape[0]}, kFloat32});
  for (size_t c = 0; c < scale.size(); ++c) {
    double b = conv->HasInput(2) ? g->value(conv->inputs[2]).constant->GetAsDouble(c) : 0.0;
    nb->SetFromDouble(static_cast<int64_t>(c), b * scale[c] + shift[c]);
  }
  std::string wname = g->value(conv->inputs[1]).name;
  conv->inputs[1] = g->AddConstant(g->UniqueName(wname + suffix), nw);
  int bias = g->AddConstant(g->UniqueName(conv->name + "_bias" + suffix), nb);
  if (conv->inputs.size() < 3) conv->inputs.resize(3, kAbsentValue);
  conv->inputs[2] = bias;
  return true;
}

}  // namespace compiler
}  // namespace ember
