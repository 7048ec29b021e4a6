/*!
 * \file ember/compiler/ir/causal_mask.h
 * \brief The attribute MarkCausalMasks (compiler/transform/) sets where attention is masked past
 *  a diagonal, and the mask values it recognises. Kernels read it as a permission: a kernel that
 *  ignores it computes the same result the long way.
 */
#ifndef EMBER_COMPILER_IR_CAUSAL_MASK_H_
#define EMBER_COMPILER_IR_CAUSAL_MASK_H_

namespace ember {
namespace compiler {

/*! \brief An int c >= 1 on three nodes of attention, about element (row m, column j) of the
 *  trailing two axes, for j >= m + c. On the Add of a constant mask (read only by a Softmax):
 *  its result there is masked, and a kernel may store -inf there instead. On that Softmax: its
 *  input there is masked, its output 0. On the MatMul (or Gemm) reading the Softmax's output
 *  as its first operand: that operand is 0 there, so the sum over k may stop at m + c. */
constexpr const char* kCausalFromAttr = "ember_causal_from";

/*! \brief A mask value at most this (-inf, or float32's lowest as exporters write it) leaves
 *  exp(score + mask - row max) exactly 0 in float32 for every finite score below 1e29. */
constexpr double kMaskedAtMost = -1e30;

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_CAUSAL_MASK_H_
