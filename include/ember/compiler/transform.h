/*!
 * \file ember/compiler/transform.h
 * \brief Graph passes. Each takes the graph in canonical form and keeps it so.
 */
#ifndef EMBER_COMPILER_TRANSFORM_H_
#define EMBER_COMPILER_TRANSFORM_H_

#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/strategy.h>

#include <functional>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

/*!
 * \brief Per-node canonicalization + type inference + folding, in topological order: constant
 * inputs become attributes, defaults are filled, Shape/Size/ConstantOfShape/Range and nodes with
 * only constant inputs are evaluated on the host. Needs `opset` (ai.onnx) for version differences.
 * With a `strategy`, a quantized conv an int8 kernel takes on its target stays an integer conv
 * (kDataZeroPointAttr); without, it runs exactly on the float kernels.
 */
void Canonicalize(Graph* graph, int64_t opset, const KernelStrategy* strategy = nullptr);
/*! \brief What FuseQdq made (`emberc compile -v` prints it). */
struct FuseQdqStats {
  int qlinear_conv = 0;
  int qlinear_matmul = 0;
  int float_result = 0;  // integer products whose float results are not quantized again
  int max_pool = 0;      // MaxPools of dequantized bytes that pool the bytes instead
};

/*! \brief ONNX's QDQ layout as integer ops, before Canonicalize: QuantizeLinear of a Conv (or
 *  Conv + Relu, or MatMul) of DequantizeLinear operands becomes QLinearConv / QLinearMatMul, as
 *  ONNX Runtime runs it; a Conv, MatMul or Gemm of DequantizeLinear operands whose float result
 *  is not quantized again becomes ConvInteger / MatMulInteger scaled once (see
 *  compiler/transform/fuse_qdq.cc for when each applies). */
FuseQdqStats FuseQdq(Graph* graph);
/*! \brief Evaluates on the host every node whose inputs are all constants (if it can). */
void FoldConstants(Graph* graph);
/*! \brief Removes Identity/Dropout, no-op Reshape/Transpose/Cast/Expand/Slice/Pad/Concat, merges
 *  Reshape chains and turns Flatten/Squeeze/Unsqueeze into Reshape. */
void Simplify(Graph* graph);
/*! \brief BatchNormalization folded into the Conv/Gemm before it, else turned into Mul + Add. */
void FoldBatchNorm(Graph* graph);
/*! \brief Elementwise ops after a ConvTranspose's PhaseInterleave move before it, onto the Conv
 *  computing its phases; per-channel Add/Mul fold into that Conv's weights and bias. */
void SinkPhaseInterleave(Graph* graph);
/*! \brief Conv chains in NCHW[x]c where the strategy's conv kernel works blocked (x its vector
 *  width), elementwise nodes between them too; LayoutTransform nodes where a chain meets a reader
 *  of NCHW or a graph output (see ember/compiler/ir/layout.h). */
void AlterConvLayout(Graph* graph, const KernelStrategy& strategy);
/*! \brief The strategy pass: every Conv and Gemm, in its final layout, gets the strategy's
 *  KernelPlan (ember/compiler/ir/kernel_plan.h), which the weight passes and lowering read. */
void PlanKernels(Graph* graph, const KernelStrategy& strategy);
/*! \brief Repacks constant Conv weights into the blocked layout their planned kernel reads
 *  (see kPackedWeightBlockAttr), so kernels do not repack them on every call. */
void PackConvWeights(Graph* graph);
/*! \brief Transforms, once at compile time, the constant weights of the 3 x 3 convs planned to
 *  run as Winograd (see kWinogradTileAttr and compiler/schedule/conv2d_winograd.cc). */
void WinogradConvWeights(Graph* graph);
/*! \brief float16 Conv, ConvTranspose, Gemm, MatMul and pools compute on the float32 kernels
 *  between Casts (float16 computes in float32 and rounds each result anyway). */
void ComputeFloat16InFloat32(Graph* graph);
/*! \brief A float conv no conv kernel of the strategy takes (1-D convs, channel counts the
 *  blocked kernels cannot tile) becomes a Gather of its patches, a Gemm with the weight as
 *  [C * taps][OC] and a Transpose to channels first, where the patches are small. */
void ConvAsDense(Graph* graph, const KernelStrategy& strategy);
/*! \brief MatMul with a constant 2-D weight becomes Gemm (through Reshapes to and from rows for
 *  inputs of rank > 2), and a Gemm with transB = 1 and a constant weight reads a transposed copy:
 *  dense products then read their weight as [K][N], as the dense schedule streams it. */
void CanonicalizeDense(Graph* graph);
/*! \brief Repacks the constant weights of dense products whose planned kernel tiles them (see
 *  kPackedDenseWidthAttr), so it reads each panel contiguously without copying it per call. */
void PackDenseWeights(Graph* graph);
/*! \brief Drops nodes none of whose outputs is used. */
void EliminateDeadCode(Graph* graph);
/*! \brief Attention masked past a diagonal: sets kCausalFromAttr (ember/compiler/ir/
 *  causal_mask.h) on the mask's Add, the Softmax after it and the product reading that. */
void MarkCausalMasks(Graph* graph);

/*! \brief The most elements emberc computes into a constant at compile time: past it a value
 *  is left to the kernels (a tiny model must not make emberc allocate gigabytes). */
constexpr int64_t kMaxFoldElements = int64_t{1} << 24;

/*! \brief Evaluate one node on the host; false when the op has no host evaluator or an output
 *  has more than kMaxFoldElements. */
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
