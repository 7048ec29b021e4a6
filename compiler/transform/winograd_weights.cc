// WinogradConvWeights: the constant weights of the convs planned to run as Winograd
// (compiler/schedule/conv2d_winograd.cc) transformed once, at compile time, into U = G g G^T per
// channel pair, in the layout that kernel streams (see kWinogradTileAttr).
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/winograd.h>
#include <ember/compiler/transform.h>

#include "transform/derived_constants.h"

namespace ember {
namespace compiler {
namespace {

// OIHW 3 x 3 kernels -> U as [alpha^2][OC/block][IC][block], declared [OC][IC][alpha][alpha].
HostTensorPtr TransformWeights(const HostTensor& w, const WinogradTransform& t, int64_t block) {
  const int64_t oc = w.type.shape[0], ic = w.type.shape[1], a = t.alpha;
  auto u = std::make_shared<HostTensor>(TensorType{{oc, ic, a, a}, w.type.dtype});
  const float* src = w.Data<float>();
  float* dst = u->Data<float>();
  for (int64_t o = 0; o < oc; ++o) {
    for (int64_t i = 0; i < ic; ++i) {
      std::vector<double> k = TransformKernel(t, src + (o * ic + i) * 9);
      for (int64_t xi = 0; xi < a * a; ++xi) {
        dst[((xi * (oc / block) + o / block) * ic + i) * block + o % block] =
            static_cast<float>(k[xi]);
      }
    }
  }
  return u;
}

}  // namespace

void WinogradConvWeights(Graph* graph) {
  DerivedConstants derived(graph);
  for (Node& n : graph->nodes()) {
    if (n.op != "Conv" || n.HasAttr(kWinogradTileAttr) || n.HasAttr(kPackedWeightBlockAttr) ||
        !n.HasInput(1)) {
      continue;
    }
    const KernelPlan plan = KernelPlan::Of(n);
    const WinogradTransform* t = FindWinogradTransform(plan.winograd_tile);
    if (t == nullptr) continue;
    const int w = n.inputs[1];
    if (!graph->value(w).is_constant()) continue;
    const std::string params =
        std::to_string(plan.winograd_tile) + "x" + std::to_string(plan.winograd_block);
    n.inputs[1] = derived.Get(w, "_winograd", params, [&] {
      return TransformWeights(*graph->value(w).constant, *t, plan.winograd_block);
    });
    n.attrs[kWinogradTileAttr] = plan.winograd_tile;
    n.attrs[kWinogradBlockAttr] = plan.winograd_block;
  }
}

}  // namespace compiler
}  // namespace ember
