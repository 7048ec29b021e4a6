// PackConvWeights: constant Conv weights rewritten once, at compile time, into the blocked layout
// the conv's planned kernel reads (compiler/schedule/conv2d_nchw_ocvec.cc, conv2d_1x1.cc).
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/transform.h>

#include <algorithm>

namespace ember {
namespace compiler {
namespace {

// OIHW -> [OC/block][IC/ic_block][KH][KW][ic_block][block] (ic_block 1: [OC/block][IC][KH][KW]
// [block]); the element count and declared shape stay.
HostTensorPtr PackOIHW(const HostTensor& w, int64_t block, int64_t ic_block) {
  const std::vector<int64_t>& shape = w.type.shape;
  const int64_t oc = shape[0], ic = shape[1], taps = shape[2] * shape[3];
  auto packed = std::make_shared<HostTensor>(w.type);
  const float* src = w.Data<float>();
  float* dst = packed->Data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < ic; ++i) {
      for (int64_t t = 0; t < taps; ++t) {
        const int64_t outer = ((o / block) * (ic / ic_block) + i / ic_block) * taps + t;
        dst[(outer * ic_block + i % ic_block) * block + o % block] = src[(o * ic + i) * taps + t];
      }
    }
  }
  return packed;
}

}  // namespace

void PackConvWeights(Graph* graph) {
  for (Node& n : graph->nodes()) {
    if (n.op != "Conv" || n.HasAttr(kPackedWeightBlockAttr) || !n.HasInput(1)) continue;
    const Value& w = graph->value(n.inputs[1]);
    if (!w.is_constant() || w.type.dtype != kFloat32 || w.type.shape.size() != 4) continue;
    const KernelPlan plan = KernelPlan::Of(n);
    const int64_t block = plan.weight_block, ic_block = plan.weight_ic_block;
    if (block <= 1) continue;
    HostTensorPtr packed = PackOIHW(*w.constant, block, std::max<int64_t>(1, ic_block));
    n.inputs[1] = graph->AddConstant(graph->UniqueName(w.name + "_packed"), packed);
    n.attrs[kPackedWeightBlockAttr] = block;
    if (ic_block > 1) n.attrs[kPackedWeightIcBlockAttr] = ic_block;
  }
}

}  // namespace compiler
}  // namespace ember
