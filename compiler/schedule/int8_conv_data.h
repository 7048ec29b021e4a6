// The dense int8 conv kernels' shared view of an integer conv (conv2d_int8.cc, conv2d_int8_1x1.cc):
// its geometry and the copy of its data into the byte layout their dot products read.
#ifndef EMBER_COMPILER_SCHEDULE_INT8_CONV_DATA_H_
#define EMBER_COMPILER_SCHEDULE_INT8_CONV_DATA_H_

#include <ember/compiler/ir/graph.h>
#include <ember/compiler/lower.h>

#include <cstdint>

#include "schedule.h"

namespace ember::compiler::schedule {

// An integer conv's geometry, from its data, its weight (OIHW, or packed: [OCp/B][ICp/4][KH][KW]
// [B][4], whose oc the caller takes from the output) and attributes.
struct Int8Conv {
  int64_t n, c, h, w;
  int64_t oc, kh, kw, s_h, s_w, pad_t, pad_l;
  int64_t zu;            // the zero point as the kernel reads the data (unsigned bytes)
  int64_t pad_b, pad_r;  // the bottom and right pads
};

/*! \brief Reads an ungrouped integer conv (int8_conv_operands.h) whose data zero point fits its
 * type and whose sums cannot overflow int32; `packed`: the weight is PackConvWeights' int8 layout.
 */
bool ReadInt8Conv(const Graph& g, const Node& conv, bool packed, Int8Conv* m);

/*! \brief Image n of x copied into xq as [ICp/4][ph][pw][4] bytes (int8 data + 128), m.zu outside
 * the image and past its channels, so that one int32 is one pixel's four channels; every byte
 * less `offset` (Int8DataOffset: 128 flips it to signed for an s8 x s8 dot, once per byte here
 * rather than per dot). */
lower::Stmt PackInt8Data(const Int8Conv& m, const lower::Buffer& x, bool signed_data,
                         int64_t offset, const lower::Buffer& xq, const te::Expr& n, int64_t ph,
                         int64_t pw, const lower::ScheduleOptions& opts);

/*! \brief One dot-product step of the kernel of `p` on the bytes PackInt8Data wrote (`data`) and
 * the packed weights: te::DotS8S8 where p reads the data signed (SignedDot), te::DotU8S8Pairs
 * with SaturatingPairs, else te::DotU8S8. */
te::Expr Int8ConvDot(const Conv2dInt8Params& p, const te::Expr& acc, const te::Expr& data,
                     const te::Expr& weights);

// Largest data workspace (bytes) per image the kernels copy into.
constexpr int64_t kMaxPaddedBytes = int64_t{1} << 28;

inline int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_INT8_CONV_DATA_H_
