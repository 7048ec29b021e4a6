/*!
 * \file ember/compiler/ir/winograd.h
 * \brief Winograd minimal filtering F(m x m, 3 x 3) (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", CVPR 2016): an m x m tile of a 3 x 3 convolution's output is
 * A^T [(G g G^T) . (B^T d B)] A, d the (m + 2) x (m + 2) input tile and g the kernel, so the
 * reduction over input channels runs on (m + 2)^2 products per tile instead of 9 m^2.
 *
 * A Conv carrying kWinogradTileAttr (set by WinogradConvWeights, see ember/compiler/transform.h)
 * reads a weight constant holding G g G^T per channel pair instead of g.
 */
#ifndef EMBER_COMPILER_IR_WINOGRAD_H_
#define EMBER_COMPILER_IR_WINOGRAD_H_

#include <cstdint>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief The matrices of F(m x m, 3 x 3), row-major, on the points 0, +-1, +-2 and infinity. */
struct WinogradTransform {
  int64_t m = 0;           // output tile
  int64_t alpha = 0;       // input tile: m + 2
  std::vector<double> at;  // A^T: m x alpha
  std::vector<double> g;   // G: alpha x 3
  std::vector<double> bt;  // B^T: alpha x alpha
  /*! \brief R (3 x alpha) with R G = I: the kernel back from a transformed one, g = R U R^T. */
  std::vector<double> recover;
};

/*! \brief F(m x m, 3 x 3) for m = 2 or 4; null otherwise. */
const WinogradTransform* FindWinogradTransform(int64_t m);

/*! \brief U = G g G^T (alpha x alpha, row-major) of one 3 x 3 kernel g (row-major). */
std::vector<double> TransformKernel(const WinogradTransform& t, const float* g);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_WINOGRAD_H_
