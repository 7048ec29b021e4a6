// PackConvWeights: constant Conv weights rewritten once, at compile time, into the blocked layout
// the target's conv kernel reads (compiler/schedule/conv2d_nchw_ocvec.cc, conv2d_1x1.cc).
#include <ember/compiler/target.h>
#include <ember/compiler/transform.h>

#include <cstring>

#include "../schedule/schedule.h"

namespace ember {
namespace compiler {
namespace {

// OIHW -> [OC/block][IC/group][KH][KW][block]; the element count and declared shape stay.
HostTensorPtr PackOIHW(const HostTensor& w, int64_t block) {
  const std::vector<int64_t>& shape = w.type.shape;
  const int64_t oc = shape[0];
  const int64_t per_oc = w.NumElements() / oc;
  auto packed = std::make_shared<HostTensor>(w.type);
  const float* src = w.Data<float>();
  float* dst = packed->Data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t r = 0; r < per_oc; ++r) {
      dst[((o / block) * per_oc + r) * block + o % block] = src[o * per_oc + r];
    }
  }
  return packed;
}

}  // namespace

void PackConvWeights(Graph* graph, const Target& target) {
  for (Node& n : graph->nodes()) {
    if (n.op != "Conv" || n.HasAttr(kPackedWeightBlockAttr) || !n.HasInput(1)) continue;
    const Value& w = graph->value(n.inputs[1]);
    if (!w.is_constant() || w.type.dtype != kFloat32 || w.type.shape.size() != 4) continue;
    int64_t block = schedule::ConvWeightBlock(*graph, n, target);
    if (block <= 1) continue;
    HostTensorPtr packed = PackOIHW(*w.constant, block);
    n.inputs[1] = graph->AddConstant(graph->UniqueName(w.name + "_packed"), packed);
    n.attrs[kPackedWeightBlockAttr] = block;
  }
}

}  // namespace compiler
}  // namespace ember
