// Helpers shared by the shape rules and the canonicalizer (private to the compiler).
#ifndef EMBER_COMPILER_IR_SHAPE_UTIL_H_
#define EMBER_COMPILER_IR_SHAPE_UTIL_H_

#include <ember/compiler/ir/graph.h>

#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*! \brief Numpy broadcast of two shapes; throws naming the node on mismatch. */
std::vector<int64_t> BroadcastShapes(const Node& node, const std::vector<int64_t>& a,
                                     const std::vector<int64_t>& b);
/*! \brief axis in [-rank, rank) -> [0, rank); throws naming node and attribute. */
int64_t NormalizeAxis(const Node& node, int64_t axis, int64_t rank, const char* what = "axis");
/*! \brief A convolution's X and W (unblocked NCHW...): equal ranks >= 3, a W with no empty
 *  dimension, and X's channels W's input channels times `group`; throws naming the node. */
void CheckConvOperands(const Node& node, const TensorType& x, const TensorType& w, int64_t group);
/*! \brief A ConvTranspose's X and W [C, M / group, k...]: ranks and a non-empty W as for a
 *  convolution, W's first dim X's channels, and those channels a multiple of `group`. */
void CheckConvTransposeOperands(const Node& node, const TensorType& x, const TensorType& w,
                                int64_t group);
/*! \brief Throws CompileError "<node>: <msg>". */
[[noreturn]] void NodeError(const Node& node, const std::string& msg);
[[noreturn]] void NodeUnsupported(const Node& node, const std::string& msg);
/*! \brief Ceil / floor division for positive divisors. */
inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_SHAPE_UTIL_H_
