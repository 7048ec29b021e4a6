/*!
 * \file ember/compiler/ir/weight_layout.h
 * \brief Ember's attributes for constant weights stored in the layout their kernel reads. The
 *  weight passes (compiler/transform/) set them; ops and kernels read them.
 */
#ifndef EMBER_COMPILER_IR_WEIGHT_LAYOUT_H_
#define EMBER_COMPILER_IR_WEIGHT_LAYOUT_H_

#include <cstdint>

namespace ember {
namespace compiler {

/*! \brief Conv attribute set by PackConvWeights: the weight constant holds its data as
 *  [OC/B][IC/group][KH][KW][B] (B = the attribute's value) under its declared OIHW shape. */
constexpr const char* kPackedWeightBlockAttr = "ember_packed_weight_block";
/*! \brief Set by PackConvWeights next to kPackedWeightBlockAttr for convs reading NCHW[X]c data
 *  (X = the value): the input channels are blocked too, [OC/B][I/X][KH][KW][X][B], so that a
 *  kernel stepping through the X channels of one pixel reads its weights contiguously. */
constexpr const char* kPackedWeightIcBlockAttr = "ember_packed_weight_ic_block";
/*! \brief Conv attributes set by WinogradConvWeights: the conv runs as F(m x m, 3 x 3) (m = the
 *  tile attribute's value, see ember/compiler/ir/winograd.h) and its weight constant holds
 *  U = G g G^T of every (output, input) channel pair as [alpha^2][OC/B][IC][B] (B = the block
 *  attribute's value), under the declared shape [OC][IC][alpha][alpha]. */
constexpr const char* kWinogradTileAttr = "ember_winograd_tile";
constexpr const char* kWinogradBlockAttr = "ember_winograd_block";
/*! \brief Integer-conv attribute (see kDataZeroPointAttr) set by PackConvWeights for an int8_dot
 *  plan: the weight constant is int8 [OCp/B][ICp/4][KH][KW][B][4] (B = the value; OCp, ICp the
 *  channels rounded up to B and 4, zeros past them), four input channels of one output channel
 *  in consecutive bytes, and the bias (int32 [OCp], always present) is compensated: the conv
 *  computes sum((u - offset) * w) + bias over u, the data as unsigned bytes (int8 data + 128),
 *  padded with the zero point in that form, and offset the kPackedInt8DataOffsetAttr value. */
constexpr const char* kPackedInt8WeightAttr = "ember_packed_int8_weight";
/*! \brief Set beside kPackedInt8WeightAttr (absent: 0): what the kernel subtracts from the data's
 *  unsigned bytes before it multiplies them, kInt8SignedDotOffset for an s8 x s8 dot (Arm sdot:
 *  u - 128, the byte with its top bit flipped), 0 for a u8 x s8 one (vpdpbusd, Arm usdot). */
constexpr const char* kPackedInt8DataOffsetAttr = "ember_packed_int8_data_offset";
/*! \brief Set (to 1) beside kPackedInt8WeightAttr where each vector of B output channels' four
 *  bytes is in halves order (te::kDotS8S8Halves): bytes 0-1 of the B channels first, then bytes
 *  2-3, each channel's two adjacent; the NEON widening dot multiplies them so. */
constexpr const char* kPackedInt8HalvesAttr = "ember_packed_int8_halves";
/*! \brief Where byte `byte` (0-3) of lane `lane` of a vector of `lanes` four-byte lanes is in
 *  halves order (kPackedInt8HalvesAttr): the packing writes it there, codegen's shuffles read it
 *  back. */
constexpr int64_t Int8HalvesIndex(int64_t lane, int64_t byte, int64_t lanes) {
  return (byte / 2 * lanes + lane) * 2 + byte % 2;
}
constexpr int64_t kInt8SignedDotOffset = 128;
/*! \brief Input channels in one int32 lane of kPackedInt8WeightAttr's layout: the four bytes one
 *  dot-product step (x86 vpdpbusd, Arm sdot) multiplies. */
constexpr int64_t kInt8DotDepth = 4;
/*! \brief Gemm attribute set by PackDenseWeights: the constant [K][N] weight holds its columns in
 *  panels of P (the value) as [N/P][K][P], then the last N % P columns as [K][N % P], under its
 *  declared [K][N] shape. */
constexpr const char* kPackedDenseWidthAttr = "ember_packed_dense_width";

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_IR_WEIGHT_LAYOUT_H_
