/*!
 * \file ember/compiler/transform.h
 * \brief Graph passes. Each takes the graph in canonical form and keeps it so.
 */
#ifndef EMBER_COMPILER_TRANSFORM_H_
#define EMBER_COMPILER_TRANSFORM_H_

#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/graph.h>

#include <functional>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

struct Target;

/*!
 * \brief Per-node canonicalization + type inference + folding, in topological order: constant
 * inputs become attributes, defaults are filled, Shape/Size/ConstantOfShape/Range and nodes with
 * only constant inputs are evaluated on the host. Needs `opset` (ai.onnx) for version differences.
 */
void Canonicalize(Graph* graph, int64_t opset);
/*! \brief Evaluates on the host every node whose inputs are all constants (if it can). */
void FoldConstants(Graph* graph);
/*! \brief Removes Identity/Dropout, no-op Reshape/Transpose/Cast/Expand/Slice/Pad/Concat, merges
 *  Reshape chains and turns Flatten/Squeeze/Unsqueeze into Reshape. */
void Simplify(Graph* graph);
/*! \brief BatchNormalization folded into the Conv/Gemm before it, else turned into Mul + Add. */
void FoldBatchNorm(Graph* graph);
/*! \brief Conv chains in NCHW[x]c where the target's conv kernel works blocked (x its vector
 *  width), elementwise nodes between them too; LayoutTransform nodes where a chain meets a reader
 *  of NCHW or a graph output (see ember/compiler/ir/layout.h). */
void AlterConvLayout(Graph* graph, const Target& target);
/*! \brief Conv attribute set by PackConvWeights: the weight constant holds its data as
 *  [OC/B][IC/group][KH][KW][B] (B = the attribute's value) under its declared OIHW shape. */
constexpr const char* kPackedWeightBlockAttr = "ember_packed_weight_block";
/*! \brief Set by PackConvWeights next to kPackedWeightBlockAttr for convs reading NCHW[X]c data
 *  (X = the value): the input channels are blocked too, [OC/B][I/X][KH][KW][X][B], so that a
 *  kernel stepping through the X channels of one pixel reads its weights contiguously. */
constexpr const char* kPackedWeightIcBlockAttr = "ember_packed_weight_ic_block";
/*! \brief Repacks constant Conv weights into the blocked layout the target's conv schedule reads
 *  (see kPackedWeightBlockAttr), so kernels do not repack them on every call. */
void PackConvWeights(Graph* graph, const Target& target);
/*! \brief Conv attributes set by WinogradConvWeights: the conv runs as F(m x m, 3 x 3) (m = the
 *  tile attribute's value, see ember/compiler/ir/winograd.h) and its weight constant holds
 *  U = G g G^T of every (output, input) channel pair as [alpha^2][OC/B][IC][B] (B = the block
 *  attribute's value), under the declared shape [OC][IC][alpha][alpha]. */
constexpr const char* kWinogradTileAttr = "ember_winograd_tile";
constexpr const char* kWinogradBlockAttr = "ember_winograd_block";
/*! \brief Transforms, once at compile time, the constant weights of the 3 x 3 convs the target's
 *  Winograd kernel takes (see kWinogradTileAttr and compiler/schedule/conv2d_winograd.cc). */
void WinogradConvWeights(Graph* graph, const Target& target);
/*! \brief MatMul with a constant 2-D weight becomes Gemm (through Reshapes to and from rows for
 *  inputs of rank > 2), and a Gemm with transB = 1 and a constant weight reads a transposed copy:
 *  dense products then read their weight as [K][N], as the dense schedule streams it. */
void CanonicalizeDense(Graph* graph);
/*! \brief Gemm attribute set by PackDenseWeights: the constant [K][N] weight holds its columns in
 *  panels of P (the value) as [N/P][K][P], then the last N % P columns as [K][N % P], under its
 *  declared [K][N] shape. */
constexpr const char* kPackedDenseWidthAttr = "ember_packed_dense_width";
/*! \brief Repacks the constant weights of dense products the target's dense kernel tiles (see
 *  kPackedDenseWidthAttr), so it reads each panel contiguously without copying it per call. */
void PackDenseWeights(Graph* graph, const Target& target);
/*! \brief Drops nodes none of whose outputs is used. */
void EliminateDeadCode(Graph* graph);

/*! \brief Evaluate one node on the host; false when the op has no host evaluator. */
bool HostEvaluate(const Node& node, const std::vector<HostTensorPtr>& inputs,
                  const std::vector<TensorType>& out_types, std::vector<HostTensorPtr>* outputs);

/*! \brief TVM-style fusion into groups; opt_level 0 puts every node in a group of its own. Adds
 *  Identity copies for graph outputs that are graph inputs or constants. Function names are
 *  "<prefix>fused_<op>_<op>..._N" (unique). */
std::vector<FusedGroup> FuseOps(Graph* graph, int opt_level);

/*! \brief A named pass for the driver's pipeline, dumps and timings. */
struct Pass {
  std::string name;
  std::function<void(Graph*)> run;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_H_
