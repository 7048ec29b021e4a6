// The dense int8 conv kernels' shared view of an integer conv (conv2d_int8.cc,
// conv2d_int8_pixels.cc): its geometry and the copy of its data into the byte layout their dot
// products read.
#ifndef EMBER_COMPILER_SCHEDULE_INT8_CONV_DATA_H_
#define EMBER_COMPILER_SCHEDULE_INT8_CONV_DATA_H_

#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/graph.h>
#include <ember/compiler/lower.h>

#include <algorithm>
#include <cstdint>

#include "epilogue.h"
#include "schedule.h"

namespace ember::compiler::schedule {

// An integer conv's geometry, from its data, its weight (OIHW, or packed: [OCp/B][ICp/4][KH][KW]
// [B][4], whose oc the caller takes from the output) and attributes.
struct Int8Conv {
  int64_t n, c, h, w;
  int64_t oc, kh, kw, s_h, s_w, pad_t, pad_l;
  int64_t zu;            // the zero point as the kernel reads the data (unsigned bytes)
  int64_t pad_b, pad_r;  // the bottom and right pads
  int64_t d_h, d_w;      // dilations
  bool signed_data;      // int8 data (read + 128)
  int zero_point_input;  // value id of the run-time zero point, or -1 (zu is then its +128 part)
  int64_t in_block, out_block;  // the data's and the output's NCHW[x]c block, or 0 (NCHW)
};

/*! \brief Reads an ungrouped integer conv (int8_conv_operands.h) whose data zero point fits its
 * type and whose sums cannot overflow int32; `packed`: the weight is PackConvWeights' int8 layout.
 */
bool ReadInt8Conv(const Graph& g, const Node& conv, bool packed, Int8Conv* m);

/*! \brief The conv's output rows and columns. */
inline int64_t OutputRows(const Int8Conv& m) {
  return (m.h + m.pad_t + m.pad_b - m.d_h * (m.kh - 1) - 1) / m.s_h + 1;
}
inline int64_t OutputCols(const Int8Conv& m) {
  return (m.w + m.pad_l + m.pad_r - m.d_w * (m.kw - 1) - 1) / m.s_w + 1;
}

/*! \brief The padded data's rows and columns a conv of `oh` x `ow` outputs reads. */
inline int64_t PaddedRows(const Int8Conv& m, int64_t oh) {
  return std::max(m.h + m.pad_t, (oh - 1) * m.s_h + (m.kh - 1) * m.d_h + 1);
}
inline int64_t PaddedCols(const Int8Conv& m, int64_t ow) {
  return std::max(m.w + m.pad_l, (ow - 1) * m.s_w + (m.kw - 1) * m.d_w + 1);
}

/*! \brief The zero point as the kernel reads the data (unsigned bytes): m.zu, or, with a run-time
 * zero point, its value in `zp` (+ 128 for int8 data). */
te::Expr ZeroPointByte(const Int8Conv& m, const lower::Buffer& zp);

/*! \brief Output channel oc's bias as the kernel adds it: bias[oc], minus zp * wsum[oc] with a
 * run-time zero point (PackConvWeights folds a constant one into the bias). `lanes` > 1: the
 * vector of channels oc .. oc + lanes - 1. */
te::Expr KernelBias(const Int8Conv& m, const lower::Buffer& bias, const lower::Buffer& zp,
                    const lower::Buffer& wsum, const te::Expr& oc, int lanes);

/*! \brief What both dense int8 kernels start from: the group's single integer conv with weights
 * PackConvWeights packed for their entry, its geometry (oc from the output), the lowered function
 * with the group's epilogue and the conv's operand buffers. */
struct Int8ConvGroup {
  const Node* conv = nullptr;
  Int8Conv m{};
  int64_t oh = 0, ow = 0, quads = 0, ocp = 0;  // output plane, input channel quads, padded oc
  lower::LoweredFunc f;
  lower::Buffer x, w, bias, zp, wsum;  // zp, wsum: a run-time zero point's, or null
  EpilogueAt at;
};

/*! \brief Reads the group for the kernel of entry p (weight block p.WeightBlock(), its data
 * offset): false when it is not such a group. */
bool ReadInt8ConvGroup(const FusedGroup& group, const Conv2dInt8Params& p, Int8ConvGroup* out);

/*! \brief The data workspace (bytes), its int32 view (a pixel's channel quad each), the
 * weights' int32 view and, for blocked data, the data's int32 view (null otherwise). */
struct Int8ConvViews {
  lower::Buffer xq, xq32, w32, x32;
};
/*! \brief Adds them to c->f, the workspace `words` quads long (none when 0: the kernel reads the
 * data in place). */
Int8ConvViews AddInt8ConvViews(Int8ConvGroup* c, int64_t words);

/*! \brief The buffers of f (the group's inputs) holding a run-time zero point and the weight
 * sums (kDataZeroPointInput, kWeightSumInput), both null when the zero point is constant; false
 * when the conv lacks them. */
bool RunTimeZeroPointBuffers(const FusedGroup& group, const Node& conv, const Int8Conv& m,
                             const lower::LoweredFunc& f, lower::Buffer* zp, lower::Buffer* wsum);

/*! \brief Where PackInt8Data puts the padded data: [ICp/4][s_h][s_w][rows][cols][4] bytes, the
 * padded plane split by stride phase (padded row y is row y / s_h of phase row y % s_h, and
 * likewise for columns), so that a strided conv's tap reads consecutive words for consecutive
 * outputs. One phase (s_h = s_w = 1) is the padded plane itself. */
struct Int8DataLayout {
  int64_t rows = 0, cols = 0;  // of one phase
  int64_t s_h = 1, s_w = 1;
  /*! \brief int32 words (pixels' channel quads) per quad of channels. */
  int64_t QuadWords() const { return s_h * s_w * rows * cols; }
};

/*! \brief Image n of x copied into xq as `layout` says (int8 data + 128), `zu` (the zero point
 * byte, ZeroPointByte) outside the image and past its channels, so that one int32 is one pixel's
 * four channels; every byte less `offset` (Int8DataOffset: 128 flips it to signed for an s8 x s8
 * dot, once per byte here rather than per dot). */
lower::Stmt PackInt8Data(const Int8Conv& m, const lower::Buffer& x, const te::Expr& zu,
                         int64_t offset, const Int8ConvViews& views, const te::Expr& n,
                         const Int8DataLayout& layout, const lower::ScheduleOptions& opts);

/*! \brief Whether a kernel can read the data's channel quads where they are, as words of
 * Int8ConvViews::x32 (InPlaceWord), instead of a PackInt8Data copy: blocked in whole quads,
 * unpadded, and its bytes already what the dot reads (nothing to add for `offset`). */
bool ReadsDataInPlace(const Int8Conv& m, int64_t offset);

/*! \brief One dot-product step of the kernel of `p` on the bytes PackInt8Data wrote (`data`) and
 * the packed weights: te::DotS8S8 where p reads the data signed (SignedDot), te::DotU8S8Pairs
 * with SaturatingPairs, else te::DotU8S8. */
te::Expr Int8ConvDot(const Conv2dInt8Params& p, const te::Expr& acc, const te::Expr& data,
                     const te::Expr& weights);

// Largest data workspace (bytes) per image the kernels copy into.
constexpr int64_t kMaxPaddedBytes = int64_t{1} << 28;

inline int64_t RoundUp(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

/*! \brief Where element (n, c, y, x) of a `channels` x `rows` x `cols` image lies in NCHW
 * (block 0) or NCHW[block]c. */
inline te::Expr NchwOrBlockedIndex(int64_t block, int64_t channels, int64_t rows, int64_t cols,
                                   const te::Expr& n, const te::Expr& c, const te::Expr& y,
                                   const te::Expr& x) {
  if (block == 0) return ((n * channels + c) * rows + y) * cols + x;
  const te::Expr b(block);
  return (((n * (channels / block) + te::FloorDiv(c, b)) * rows + y) * cols + x) * block +
         te::FloorMod(c, b);
}

/*! \brief The word of Int8ConvViews::x32 holding channel quad c4 of pixel (y, x) of image n
 * (ReadsDataInPlace: NCHW[x]c bytes read as words are NCHW[x/4]c quads). */
inline te::Expr InPlaceWord(const Int8Conv& m, const te::Expr& n, const te::Expr& c4,
                            const te::Expr& y, const te::Expr& x) {
  return NchwOrBlockedIndex(m.in_block / kInt8DotDepth, m.c / kInt8DotDepth, m.h, m.w, n, c4, y, x);
}

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_INT8_CONV_DATA_H_
