// Folding a per-output-channel affine map that follows a Conv into the Conv's constants.
#ifndef EMBER_COMPILER_TRANSFORM_FOLD_INTO_CONV_H_
#define EMBER_COMPILER_TRANSFORM_FOLD_INTO_CONV_H_

#include <ember/compiler/ir/graph.h>

#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*!
 * \brief Makes `conv` compute conv(x) * scale[c] + shift[c] for each output channel c: its weights
 * (a float32 constant with one row per channel) scaled, its bias (constant or absent) rebuilt, as
 * new constants named with `suffix`. False, changing nothing, when the weights or bias do not
 * allow it.
 */
bool FoldChannelAffineIntoConv(Graph* g, Node* conv, const std::vector<double>& scale,
                               const std::vector<double>& shift, const std::string& suffix);

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_FOLD_INTO_CONV_H_
