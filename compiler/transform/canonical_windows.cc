// Window functions (opset 17: HannWindow, HammingWindow, BlackmanWindow): their size is a
// constant once shapes are static, so each becomes a constant, sum_m a_m cos(2 pi m n / d) for
// n < size, with d = size (periodic, the default) or size - 1 (symmetric).
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <cmath>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {
namespace {

// The cosine series of each window, as ONNX defines them (Hamming: a0 = 25/46).
const std::vector<double> kHann = {0.5, -0.5};
const std::vector<double> kHamming = {25.0 / 46.0, -21.0 / 46.0};
const std::vector<double> kBlackman = {0.42, -0.5, 0.08};

void WindowOp(Node n, const std::vector<double>& series, CanonicalizeContext* ctx) {
  const int64_t size = ctx->OneValueInput(n, 0, "size")->GetAsInt(0);
  if (size < 1 || size > kMaxFoldElements) {
    NodeError(
        n, "size must be 1.." + std::to_string(kMaxFoldElements) + ", got " + std::to_string(size));
  }
  const DLDataType dtype = OnnxToDType(static_cast<int32_t>(n.GetInt("output_datatype", 1)),
                                       n.Describe() + ": attribute 'output_datatype'");
  const bool periodic = n.GetInt("periodic", 1) != 0;
  const double d = static_cast<double>(periodic || size == 1 ? size : size - 1);
  auto window = std::make_shared<HostTensor>(TensorType{{size}, dtype});
  for (int64_t i = 0; i < size; ++i) {
    double v = 0;
    for (size_t m = 0; m < series.size(); ++m) {
      v += series[m] * std::cos(2.0 * M_PI * static_cast<double>(m) * static_cast<double>(i) / d);
    }
    window->SetFromDouble(i, v);
  }
  ctx->SetConstOutput(n.outputs.at(0), window);
}

}  // namespace

EMBER_REGISTER_OP_CANONICALIZE("HannWindow",
                               [](Node n, CanonicalizeContext* ctx) { WindowOp(n, kHann, ctx); });
EMBER_REGISTER_OP_CANONICALIZE("HammingWindow", [](Node n, CanonicalizeContext* ctx) {
  WindowOp(n, kHamming, ctx);
});
EMBER_REGISTER_OP_CANONICALIZE("BlackmanWindow", [](Node n, CanonicalizeContext* ctx) {
  WindowOp(n, kBlackman, ctx);
});

}  // namespace compiler
}  // namespace ember
