/*!
 * \file ember/compiler/ir/kernel_plan.h
 * \brief The kernel chosen for a node, carried on the node from the strategy pass (PlanKernels)
 *  to weight preparation and lowering, so that the choice is made once.
 */
#ifndef EMBER_COMPILER_IR_KERNEL_PLAN_H_
#define EMBER_COMPILER_IR_KERNEL_PLAN_H_

#include <ember/compiler/ir/graph.h>

#include <cstdint>
#include <string>

namespace ember {
namespace compiler {

/*! \brief Conv attribute (value 1) of a conv whose float32 sums must come out exact (integer
 *  products the quantized ops run on the float kernels, every partial sum an integer below 2^24):
 *  only kernels that add the products as they are may run it, not one that transforms its
 *  operands first (Winograd). */
constexpr const char* kExactSumAttr = "ember_exact_sum";

/*! \brief Conv attribute of an integer conv (8-bit data and weights, int32 result, as ONNX's
 *  ConvInteger plus an int32 bias): the data's zero point (default 0). The conv computes
 *  sum((x - zero_point) * w) + bias, its padding zero after the shift. Quantized ops become such a
 *  conv only where the strategy plans an int8 kernel for it (KernelPlan::int8_dot). A zero point
 *  computed at run time (DynamicQuantizeLinear's) is input kDataZeroPointInput instead, a
 *  one-element tensor of the data's type, with the attribute 0 and the bias (input 2) present. */
constexpr const char* kDataZeroPointAttr = "ember_data_zero_point";
constexpr size_t kDataZeroPointInput = 3;
/*! \brief Input of an integer conv with a run-time zero point whose weights are packed for the
 *  int8 kernel: each output channel's weight sum (int32), which the kernel multiplies by it. */
constexpr size_t kWeightSumInput = 4;

struct KernelPlan {
  /*! \brief The kernel (a schedule name, e.g. "conv2d_nchw_ocvec_avx2"); empty: the default
   * schedule of compiler/lower/. */
  std::string kernel;
  /*! \brief Output-channel block of the packed conv weights the kernel reads (0: OIHW). */
  int64_t weight_block = 0;
  /*! \brief Input-channel block of that packing (0: none; see kPackedWeightIcBlockAttr). */
  int64_t weight_ic_block = 0;
  /*! \brief Winograd output tile m (2 or 4) the kernel runs, and the output-channel block of
   * its transformed weights; 0: a direct convolution. */
  int64_t winograd_tile = 0;
  int64_t winograd_block = 0;
  /*! \brief Panel width of the dense kernel's packed [K][N] weights (0: unpacked). */
  int64_t dense_panel = 0;
  /*! \brief The kernel multiplies the 8-bit integer operands of an integer conv as they are
   * (u8 x s8 dot products of four, or a depthwise conv's taps; exact sums); with weight_block >
   * 0 its weights are packed as kPackedInt8WeightAttr says, in blocks of weight_block output
   * channels, else read as the int8 OIHW constant. */
  bool int8_dot = false;
  /*! \brief With int8_dot and packed weights: what the kernel subtracts from the data's unsigned
   * bytes before its dot products (kInt8SignedDotOffset where it multiplies s8 x s8), which
   * PackConvWeights folds into the bias (kPackedInt8DataOffsetAttr). */
  int64_t int8_data_offset = 0;
  /*! \brief With int8_dot and packed weights: each weight vector in halves order
   * (kPackedInt8HalvesAttr), as the channels form of the NEON widening dot reads it. */
  bool int8_weight_halves = false;
  /*! \brief A depthwise conv whose kernel also computes the 1x1 conv (and its elementwise
   * epilogue) that produces its data, row band by row band, so the expanded channels stay in
   * cache (MobileNet's inverted residual blocks); FuseOps puts the two in one group. Its weights
   * are packed as the plain depthwise kernel's, which takes it when they end up apart. */
  bool fused_with_producer = false;

  /*! \brief True when PlanKernels attached a plan to `node`. */
  static bool IsPlanned(const Node& node);
  /*! \brief The plan attached to `node` (all defaults when there is none). */
  static KernelPlan Of(const Node& node);
  /*! \brief Stores the plan as the node's attributes (ember_plan_*). */
  void AttachTo(Node* node) const;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_KERNEL_PLAN_H_
