// WinogradConvWeights: the constant weights of the convs the target's Winograd kernel takes
// (compiler/schedule/conv2d_winograd.cc) transformed once, at compile time, into U = G g G^T per
// channel pair, in the layout that kernel streams (see kWinogradTileAttr).
#include <ember/compiler/ir/winograd.h>
#include <ember/compiler/target.h>
#include <ember/compiler/transform.h>

#include <cstdlib>
#include <cstring>

#include "../schedule/schedule.h"

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

void WinogradConvWeights(Graph* graph, const Target& target) {
  // EMBER_NO_WINOGRAD=1 keeps every conv direct: params.bin stays the model's size (transformed
  // weights are (m + 2)^2 / 9 times larger), and the two can be compared side by side.
  const char* off = std::getenv("EMBER_NO_WINOGRAD");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return;
  for (Node& n : graph->nodes()) {
    if (n.op != "Conv" || n.HasAttr(kWinogradTileAttr) || n.HasAttr(kPackedWeightBlockAttr) ||
        !n.HasInput(1)) {
      continue;
    }
    const Value& w = graph->value(n.inputs[1]);
    if (!w.is_constant() || w.type.dtype != kFloat32 || w.type.shape.size() != 4 ||
        w.type.shape[2] != 3 || w.type.shape[3] != 3) {
      continue;
    }
    int64_t block = 0;
    const int64_t tile = schedule::ConvWinogradTile(*graph, n, target, &block);
    const WinogradTransform* t = FindWinogradTransform(tile);
    if (t == nullptr || block <= 0 || w.type.shape[0] % block != 0) continue;
    HostTensorPtr u = TransformWeights(*w.constant, *t, block);
    n.inputs[1] = graph->AddConstant(graph->UniqueName(w.name + "_winograd"), u);
    n.attrs[kWinogradTileAttr] = tile;
    n.attrs[kWinogradBlockAttr] = block;
  }
}

}  // namespace compiler
}  // namespace ember
