// ConvTranspose as a Conv over its input (the sub-pixel decomposition), so the conv schedules,
// their weight packing, the blocked layout and epilogue fusion all apply to it.
#ifndef EMBER_COMPILER_TRANSFORM_CONV_TRANSPOSE_AS_CONV_H_
#define EMBER_COMPILER_TRANSFORM_CONV_TRANSPOSE_AS_CONV_H_

#include <ember/compiler/ir/graph.h>

#include "transform/rewrite_context.h"

namespace ember {
namespace compiler {

/*!
 * \brief Emits the canonical ConvTranspose `n` as Conv + PhaseInterleave and returns true, or
 * returns false (emitting nothing) when the rewrite does not apply: not 2-D, not float32, a
 * run-time weight or bias, a constant input, or negative pads.
 */
bool EmitConvTransposeAsConv(const Node& n, RewriteContext* ctx);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_CONV_TRANSPOSE_AS_CONV_H_
