// The scale / zero-point arithmetic of quantize.h. Scales are float32 because the written model
// stores them so; every quantity derived from one is computed from the stored float.
#include <ember/compiler/quantize.h>

#include <algorithm>
#include <cmath>

namespace ember {
namespace compiler {

double RoundHalfToEven(double x) { return std::nearbyint(x); }  // FE_TONEAREST: ties to even

QuantParams ActivationQuantParams(float lo, float hi) {
  const double rmin = std::min(0.0, static_cast<double>(lo));
  const double rmax = std::max(0.0, static_cast<double>(hi));
  QuantParams q;
  if (!(rmax > rmin) || !std::isfinite(rmax - rmin)) return q;  // all zeros (or NaN): scale 1
  q.scale = static_cast<float>((rmax - rmin) / (kActivationQMax - kActivationQMin));
  if (q.scale == 0.0f) q.scale = 1.0f;  // a range below float's smallest step
  const double zp = kActivationQMin - RoundHalfToEven(rmin / static_cast<double>(q.scale));
  q.zero_point = static_cast<int32_t>(
      std::clamp(zp, static_cast<double>(kActivationQMin), static_cast<double>(kActivationQMax)));
  return q;
}

QuantParams SymmetricWeightQuantParams(float max_abs) {
  QuantParams q;
  if (!(max_abs > 0.0f) || !std::isfinite(max_abs)) return q;
  q.scale = static_cast<float>(static_cast<double>(max_abs) / kWeightQMax);
  if (q.scale == 0.0f) q.scale = 1.0f;
  return q;
}

int32_t QuantizeValue(float x, const QuantParams& q, int32_t qmin, int32_t qmax) {
  const double v =
      RoundHalfToEven(static_cast<double>(x) / static_cast<double>(q.scale)) + q.zero_point;
  if (std::isnan(v)) return std::clamp(q.zero_point, qmin, qmax);
  return static_cast<int32_t>(std::clamp(v, static_cast<double>(qmin), static_cast<double>(qmax)));
}

}  // namespace compiler
}  // namespace ember
