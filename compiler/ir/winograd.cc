// The F(2x2, 3x3) and F(4x4, 3x3) matrices (see ember/compiler/ir/winograd.h).
#include <ember/compiler/ir/winograd.h>

namespace ember {
namespace compiler {
namespace {

// R with R G = I, from the three rows of G that form an invertible 3 x 3 block: row 0 is
// (g0(0), 0, 0), the last row (0, 0, g2(inf)) and row 1 weighs all three taps alike.
std::vector<double> Recovery(const std::vector<double>& g, int64_t alpha) {
  const int64_t last = alpha - 1;
  const double a = g[0], b = g[3], c = g[last * 3 + 2];  // row 1 is (b, b, b)
  std::vector<double> r(3 * alpha, 0.0);
  r[0 * alpha + 0] = 1 / a;
  r[2 * alpha + last] = 1 / c;
  // g1 = (u1 - b g0 - b g2) / b
  r[1 * alpha + 1] = 1 / b;
  r[1 * alpha + 0] = -1 / a;
  r[1 * alpha + last] = -1 / c;
  return r;
}

WinogradTransform Make(int64_t m, std::vector<double> at, std::vector<double> g,
                       std::vector<double> bt) {
  WinogradTransform t;
  t.m = m;
  t.alpha = m + 2;
  t.recover = Recovery(g, t.alpha);
  t.at = std::move(at);
  t.g = std::move(g);
  t.bt = std::move(bt);
  return t;
}

}  // namespace

const WinogradTransform* FindWinogradTransform(int64_t m) {
  static const WinogradTransform f2 =
      Make(2, {1, 1, 1, 0, 0, 1, -1, -1}, {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
           {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1});
  static const WinogradTransform f4 =
      Make(4, {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1},
           {1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 24,
            1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1},
           {4, 0,  -5, 0, 1, 0, 0, -4, -4, 1,  1, 0, 0, 4, -4, -1, 1, 0,
            0, -2, -1, 2, 1, 0, 0, 2,  -1, -2, 1, 0, 0, 4, 0,  -5, 0, 1});
  if (m == 2) return &f2;
  if (m == 4) return &f4;
  return nullptr;
}

std::vector<double> TransformKernel(const WinogradTransform& t, const float* g) {
  const int64_t a = t.alpha;
  std::vector<double> gk(a * 3, 0.0);  // G g
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 3; ++k) gk[i * 3 + j] += t.g[i * 3 + k] * g[k * 3 + j];
    }
  }
  std::vector<double> u(a * a, 0.0);  // (G g) G^T
  for (int64_t i = 0; i < a; ++i) {
    for (int64_t j = 0; j < a; ++j) {
      for (int64_t k = 0; k < 3; ++k) u[i * a + j] += gk[i * 3 + k] * t.g[j * 3 + k];
    }
  }
  return u;
}

}  // namespace compiler
}  // namespace ember
