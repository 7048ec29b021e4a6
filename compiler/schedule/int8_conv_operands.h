// What the int8 convolution kernels (conv2d_int8.cc, conv2d_int8_pixels.cc and the depthwise
// ones) require of an integer conv (kDataZeroPointAttr, made by canonical_quantized.cc), read in
// one place, and the bounds of their exact sums.
#ifndef EMBER_COMPILER_SCHEDULE_INT8_CONV_OPERANDS_H_
#define EMBER_COMPILER_SCHEDULE_INT8_CONV_OPERANDS_H_

#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/window_attrs.h>

#include <cstddef>
#include <cstdint>

namespace ember::compiler::schedule {

struct Int8ConvOperands {
  TensorType data;                      // NCHW dims (of a blocked value too), uint8 or int8
  const Value* weight = nullptr;        // constant, 8-bit, weight_rank dims (KH, KW at [2], [3])
  WindowAttrs window;                   // strides 1..4, pads >= 0, dilations >= 1
  int64_t zero_point = 0;               // the data's, as the model gives it
  int zero_point_input = -1;            // value id of a run-time zero point (kDataZeroPointInput)
  int64_t in_block = 0, out_block = 0;  // the data's and the output's NCHW[x]c block, or 0
};

// Largest |(x - zero point) * w| of 8-bit data and an int8 weight, and the integers float32
// holds exactly: sums of fewer than kExactFloat / kMaxInt8Product such products are exact in
// float32 (the depthwise kernels sum in float where they are).
constexpr int64_t kMaxInt8Product = 255 * 128;
constexpr int64_t kExactFloat = int64_t{1} << 24;

/*! \brief The largest magnitude of an integer constant (a bias). */
int64_t LargestMagnitude(const HostTensor& t);

/*! \brief Whether `conv` is an integer conv with 4-D 8-bit data (and output), each NCHW or
 *  NCHW[x]c as its layout attribute says, a constant 8-bit weight of `weight_rank` dims, strides
 *  1..4 and no negative pad; fills `out` when it is. Group, layout and shape rules are each
 *  kernel's own. */
bool ReadInt8ConvOperands(const Graph& g, const Node& conv, size_t weight_rank,
                          Int8ConvOperands* out);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_INT8_CONV_OPERANDS_H_
