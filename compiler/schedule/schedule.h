// Group schedules: hand-written loop nests that take over a fused group from the default schedule
// of compiler/lower/ (private to the compiler; TableStrategy chooses among them).
#ifndef EMBER_COMPILER_SCHEDULE_SCHEDULE_H_
#define EMBER_COMPILER_SCHEDULE_SCHEDULE_H_

#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/weight_layout.h>

#include <string>
#include <vector>

#include "ember/compiler/lower.h"
#include "ember/compiler/target.h"

namespace ember::compiler::schedule {

struct ConvShape;

/*! \brief Targets the table distinguishes (by ISA and SIMD width). */
enum class TargetClass { kGeneric, kSse, kAvx2, kAvx512, kNeon64, kNeon32 };
TargetClass ClassifyTarget(const Target& t);

/*! \brief Register block of the direct convolution: `lanes` consecutive output positions times
 * `oc_block` output channels accumulate in registers. */
struct Conv2dParams {
  int64_t lanes = 16;
  int64_t oc_block = 4;
  /*! \brief > 0: SIMD width the block assumes (sets LoweredFunc::prefer_vector_bits). */
  int prefer_vector_bits = 0;
  /*! \brief float32 values per SIMD register (the 1x1 kernel's vector width; divides lanes). */
  int simd_lanes = 4;

  // Setters by name, so that a row of the table says what it sets (schedule_table.cc).
  Conv2dParams& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  Conv2dParams& OcBlock(int64_t v) {
    oc_block = v;
    return *this;
  }
  Conv2dParams& VectorBits(int v) {
    prefer_vector_bits = v;
    return *this;
  }
  Conv2dParams& SimdLanes(int v) {
    simd_lanes = v;
    return *this;
  }
};

/*! \brief Register block of the channels-in-lanes convolution: `ow_block` output columns times
 * `oc_vectors` SIMD vectors of `lanes` output channels accumulate in registers. */
struct Conv2dOcVecParams {
  int64_t lanes = 16;
  int64_t oc_vectors = 2;
  int64_t ow_block = 12;
  int prefer_vector_bits = 0;

  /*! \brief > 1: one vector load brings the broadcast inputs of this many consecutive reduction
   * steps, each lane feeding its step's FMAs (AArch64's multiply by element; see te::Lane).
   * Where the target broadcasts from memory into the FMA itself (x86), 1. */
  int lane_steps = 1;
  /*! \brief > 0: a conv whose output is one pixel (a squeeze-and-excitation conv after a global
   * pool) takes up to this many vectors per tile. Each weight vector meets a single input value
   * there, so only a wider tile spreads the input's load and the loop control over more FMAs (as
   * DenseParams::gemv_vectors does for a one-row product). */
  int64_t single_pixel_vectors = 0;

  Conv2dOcVecParams& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  Conv2dOcVecParams& OcVectors(int64_t v) {
    oc_vectors = v;
    return *this;
  }
  Conv2dOcVecParams& OwBlock(int64_t v) {
    ow_block = v;
    return *this;
  }
  Conv2dOcVecParams& LaneSteps(int v) {
    lane_steps = v;
    return *this;
  }
  Conv2dOcVecParams& SinglePixelVectors(int64_t v) {
    single_pixel_vectors = v;
    return *this;
  }
  Conv2dOcVecParams& VectorBits(int v) {
    prefer_vector_bits = v;
    return *this;
  }
};

/*! \brief Depthwise blocking: `lanes` output columns per vector register. */
struct DepthwiseParams {
  int64_t lanes = 8;
  /*! \brief > 0: SIMD width the block assumes (sets LoweredFunc::prefer_vector_bits). */
  int prefer_vector_bits = 0;
  /*! \brief Vector registers the tiling assumes; 0: those of the compile target. Table rows
   * hold their target's, so an entry forced onto another target (EMBER_SCHEDULE) tiles the same. */
  int vector_registers = 0;
  /*! \brief NCHW[x]c: output pixels per register tile at most (the registers the taps leave
   * bound it too). */
  int64_t columns = 8;
  /*! \brief NCHW[x]c: output pixels one task computes at least, in whole rows, so that small
   * planes do not reload the task's weights every row; 0: one row per task. */
  int64_t task_pixels = 0;
  /*! \brief NCHW[x]c, > 0: where the first and the last tap rows start more than this many
   * bytes apart, each tap row's loads address from a base register of their own
   * (te::StreamBase), for targets whose paired loads reach only so far (AArch64 ldp q: 1008).
   * Nearer rows share one base (their own bases would only cost address arithmetic). */
  int64_t row_streams_past = 0;
  /*! \brief NCHW[x]c, stride 1: interior rows two at a time, the tile's accumulators split
   * between them, so that the kh - 1 input rows they share are loaded once for both (AArch64:
   * the loads, not the FMAs, are what keeps a 3x3 conv's loop below 60% multiply-adds). */
  bool row_pairs = false;
  /*! \brief Row pairs, > 0: output pixels a pair's tile spans per row at most, where a row's
   * interior makes two such tiles or more (fewer: `columns` / 2, see TryDepthwiseConv2dNchwc);
   * 0: `columns` / 2. */
  int64_t pair_columns = 0;

  DepthwiseParams& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  DepthwiseParams& VectorBits(int v) {
    prefer_vector_bits = v;
    return *this;
  }
  DepthwiseParams& Tile(int64_t max_columns, int64_t min_task_pixels) {
    columns = max_columns;
    task_pixels = min_task_pixels;
    return *this;
  }
  DepthwiseParams& RowStreamsPast(int64_t bytes) {
    row_streams_past = bytes;
    return *this;
  }
  DepthwiseParams& RowPairs(int64_t max_columns = 0) {
    row_pairs = true;
    pair_columns = max_columns;
    return *this;
  }
};

/*! \brief Dense product blocking: `rows` rows of A times `vectors` vectors of `lanes` output
 * columns per register tile. */
struct DenseParams {
  int64_t lanes = 16;
  int64_t rows = 6;
  int64_t vectors = 4;
  /*! \brief > 0: SIMD width the block assumes (sets LoweredFunc::prefer_vector_bits). */
  int prefer_vector_bits = 0;

  /*! \brief > 1: one vector load brings the broadcast inputs of this many consecutive reduction
   * steps, each lane feeding its step's FMAs (AArch64's multiply by element; see te::Lane).
   * Where the target broadcasts from memory into the FMA itself (x86), 1. */
  int lane_steps = 1;
  /*! \brief > 0: vectors per panel when A has one row (a GEMV, each weight used by one FMA):
   * wider panels spread A's load and the loop's control over more FMAs. 0: `vectors`. */
  int64_t gemv_vectors = 0;

  DenseParams& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  DenseParams& Rows(int64_t v) {
    rows = v;
    return *this;
  }
  DenseParams& Vectors(int64_t v) {
    vectors = v;
    return *this;
  }
  DenseParams& LaneSteps(int v) {
    lane_steps = v;
    return *this;
  }
  DenseParams& GemvVectors(int64_t v) {
    gemv_vectors = v;
    return *this;
  }
  DenseParams& VectorBits(int v) {
    prefer_vector_bits = v;
    return *this;
  }
};

/*! \brief Register block of the int8 convolution: `ow_block` output columns times `oc_vectors`
 * vectors of `lanes` int32 accumulators (output channels), each step a u8 x s8 dot product of
 * four input channels: te::DotU8S8, where the target's int8_dot_bits reach lanes * 32 (and it
 * has that u8 x s8 dot: int8_dot_u8s8); with `signed_dot` an s8 x s8 one (te::DotS8S8, Arm sdot)
 * over the data flipped to signed bytes, the flip's offset folded into the bias
 * (Int8DataOffset), where int8_dot_bits do; or, with `saturating_pairs`, te::DotU8S8Pairs where
 * its int8_pair_bits do, and only for weights whose pairs of products cannot leave int16
 * (Conv2dInt8Applies checks them); or, with `widening_dot`, where the target has no dot but its
 * int8_widening_bits reach lanes * 32 (NEON widening multiplies, EmitWideningDot): te::DotS8S8 in
 * the pixels form, te::DotS8S8Halves over weights packed in halves order in the channels form
 * (Int8WeightHalves), for weights with no two -128 in a pair it sums in int16 (Conv2dInt8Applies
 * checks them). */
struct Conv2dInt8Params {
  int64_t lanes = 16;
  int64_t oc_vectors = 2;
  int64_t ow_block = 14;
  bool saturating_pairs = false;
  /*! \brief > 0: the lanes hold output pixels instead (see conv2d_int8_pixels.cc): tiles of
   * `pixel_vectors` vectors of pixels times up to `channel_rows` output channels, the weights
   * packed one channel at a time. */
  int64_t pixel_vectors = 0;
  int64_t channel_rows = 0;
  bool signed_dot = false;
  bool widening_dot = false;

  Conv2dInt8Params& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  Conv2dInt8Params& OcVectors(int64_t v) {
    oc_vectors = v;
    return *this;
  }
  Conv2dInt8Params& OwBlock(int64_t v) {
    ow_block = v;
    return *this;
  }
  Conv2dInt8Params& SaturatingPairs() {
    saturating_pairs = true;
    return *this;
  }
  Conv2dInt8Params& PixelsInLanes(int64_t vectors, int64_t channels) {
    pixel_vectors = vectors;
    channel_rows = channels;
    return *this;
  }
  /*! \brief The output-channel block of the packed weights the kernel reads. */
  int64_t WeightBlock() const { return pixel_vectors > 0 ? 1 : lanes; }
  Conv2dInt8Params& SignedDot() {
    signed_dot = true;
    return *this;
  }
  Conv2dInt8Params& WideningDot() {
    signed_dot = widening_dot = true;
    return *this;
  }
};

/*! \brief What the kernel of `p` subtracts from the data's unsigned bytes before its dot
 * products: the operand rule the plan carries (KernelPlan::int8_data_offset). */
inline int64_t Int8DataOffset(const Conv2dInt8Params& p) {
  return p.signed_dot ? kInt8SignedDotOffset : 0;
}

/*! \brief Whether the kernel of `p` reads its weight vectors in halves order (te::DotS8S8Halves):
 * the channels form of a widening dot, whose weights would else be reordered at every step (the
 * pixels form broadcasts a channel's word instead). The plan carries it
 * (KernelPlan::int8_weight_halves). */
inline bool Int8WeightHalves(const Conv2dInt8Params& p) {
  return p.widening_dot && p.pixel_vectors == 0;
}

/*! \brief The int8 depthwise convolution: int32 lanes along the output width (`lanes` of them
 * per vector), or, blocked, a block's channels. Planned only where the target's int8_dot_bits,
 * int8_pair_bits or int8_widening_bits reach lanes * 32, beside an int8 conv, so the integer
 * chain stays integer. `dot_quads`: the blocked form sums four taps of a row per dot product
 * (te::DotU8S8, or te::DotS8S8 with `signed_dot`) where the target has that dot at lanes * 32
 * bits, instead of one tap per float multiply-add. */
struct DepthwiseInt8Params {
  int64_t lanes = 16;
  bool dot_quads = false;
  bool signed_dot = false;

  DepthwiseInt8Params& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  DepthwiseInt8Params& DotQuads() {
    dot_quads = true;
    return *this;
  }
  DepthwiseInt8Params& SignedDot() {
    signed_dot = true;
    return *this;
  }
};

/*! \brief A 1x1 conv and the depthwise conv reading its result, in one kernel
 * (expand_depthwise.cc): tiles of the 1x1 conv's rows with `expand_accumulators` accumulator
 * vectors, depthwise tiles of `dw_pixels` output pixels. */
struct ExpandDepthwiseParams {
  int64_t lanes = 8;
  int prefer_vector_bits = 0;
  int64_t expand_accumulators = 12;
  int64_t dw_pixels = 4;

  ExpandDepthwiseParams& Lanes(int64_t v) {
    lanes = v;
    return *this;
  }
  ExpandDepthwiseParams& VectorBits(int v) {
    prefer_vector_bits = v;
    return *this;
  }
  ExpandDepthwiseParams& Tiles(int64_t accumulators, int64_t pixels) {
    expand_accumulators = accumulators;
    dw_pixels = pixels;
    return *this;
  }
};

/*! \brief Which kernel an entry describes; the table lists them in order of preference. */
enum class ScheduleKind {
  kExpandDepthwise,
  kDepthwiseConv2d,
  kConv2d1x1,
  kConv2dWide,
  kConv2dOcVec,
  kDense,
  kConv2dInt8,
  kDepthwiseConv2dInt8
};

/*! \brief One kernel on one target class. Only the parameters of its kind are set (the table's
 * rows are built per kind: schedule_table.cc); the others keep their defaults. */
struct ScheduleEntry {
  const char* name;
  TargetClass target;
  ScheduleKind kind;
  Conv2dParams conv;                // kConv2d1x1, kConv2dWide
  Conv2dOcVecParams conv_ocvec;     // kConv2dOcVec
  DepthwiseParams depthwise;        // kDepthwiseConv2d
  DenseParams dense;                // kDense
  Conv2dInt8Params conv_int8;       // kConv2dInt8
  DepthwiseInt8Params dw_int8;      // kDepthwiseConv2dInt8
  ExpandDepthwiseParams expand_dw;  // kExpandDepthwise
};

/*! \brief Whether entry e's kernel can run on `target` at all (the int8 kernels need the
 * target's dot-product instruction, even when forced). */
bool EntryRunsOn(const ScheduleEntry& e, const Target& target);

/*! \brief Every schedule per target; tests and benchmarks iterate it. */
const std::vector<ScheduleEntry>& ScheduleTable();

/*! \brief Offers the group to the kernel of one table entry (true: *out is filled). */
bool TryEntry(const ScheduleEntry& e, const FusedGroup& group, const lower::ScheduleOptions& opts,
              lower::LoweredFunc* out);

/*!
 * \brief 2-D convolution (any group count, dilation 1, float32) followed by elementwise/broadcast
 * epilogue nodes. The input is copied once into a zero-padded, stride-phase-split workspace so that
 * every tap reads `lanes` consecutive floats; outputs are computed on a "wide" row pitch (garbage
 * columns are dropped by the epilogue, which the default schedule lowers). Returns false (and
 * leaves *out alone) when the group does not fit.
 */
bool TryConv2dWide(const FusedGroup& group, const lower::ScheduleOptions& opts,
                   const Conv2dParams& p, lower::LoweredFunc* out);

/*!
 * \brief Depthwise 2-D convolution (group == C == OC, weight [C, 1, KH, KW], dilation 1,
 * float32) followed by elementwise/broadcast epilogue nodes, in one pass over the output:
 * parallel over (image, channel, block of output rows); per task the block's input rows are
 * copied once into a zero-padded, stride-phase-split row buffer on the stack (in L1), then every
 * output row is `lanes`-wide vectors of contiguous loads times hoisted weights, with the epilogue
 * applied before the store. Returns false (and leaves *out alone) when the group does not fit.
 */
bool TryDepthwiseConv2d(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        const DepthwiseParams& p, lower::LoweredFunc* out);

/*!
 * \brief A dense product (Gemm reading A[M][K] and W[K][N], transA = transB = 0, alpha = 1, bias
 * absent or per column), first in its group and followed by elementwise/broadcast nodes: register
 * tiles of rows x column vectors over panels of W copied contiguous, see dense.cc. Returns false
 * (and leaves *out alone) when the group does not fit.
 */
bool TryDense(const FusedGroup& group, const lower::ScheduleOptions& opts, const DenseParams& p,
              lower::LoweredFunc* out);
/*! \brief The entry's blocking for a product of `rows` rows of A (GemvVectors for one row). */
DenseParams DenseParamsForRows(const DenseParams& entry, int64_t rows);

/*!
 * \brief Depthwise 2-D convolution in NCHW[x]c, x = p.lanes (weights packed [C/x][KH][KW][x]),
 * followed by elementwise/broadcast epilogue nodes: one pixel's channels per vector, tiles of
 * output pixels in registers, any dilation, see depthwise_conv2d_nchwc.cc. TryDepthwiseConv2d hands
 * blocked groups to it. Returns false (and leaves *out alone) when the group does not fit.
 */
bool TryDepthwiseConv2dNchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                             const DepthwiseParams& p, lower::LoweredFunc* out);

/*! \brief Whether the expand-depthwise kernel takes a 1x1 conv `expand` (stride 1, no padding,
 * one group) whose result, through elementwise nodes, is the data of the depthwise conv `dw`,
 * both writing NCHW[lanes]c (the 1x1 conv may read a narrower block, or NCHW), the 1x1 conv's
 * weights packed in blocks of `expand_block` output channels (a multiple of lanes), with enough
 * rows and channel blocks for the tasks of a launch, and the depthwise taps held in `registers`
 * vector registers beside half a tile of p.dw_pixels (DepthwiseTapsHeld). */
bool ExpandDepthwiseFits(const ConvShape& expand, int64_t expand_block, const ConvShape& dw,
                         const ExpandDepthwiseParams& p, int64_t registers);

/*!
 * \brief A group of a 1x1 conv, its elementwise epilogue, a depthwise conv of that result and its
 * epilogue (FuseOps joins them where the strategy planned it: KernelPlan::fused_with_producer),
 * as one pass over bands of output rows: each task computes the expanded rows one channel block
 * at a time into a small ring of rows that stays in cache and runs the depthwise conv from it,
 * so the expanded tensor (the block's largest) is never written out; see expand_depthwise.cc.
 * Returns false (and leaves *out alone) when the group does not fit.
 */
bool TryExpandDepthwise(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        const ExpandDepthwiseParams& p, lower::LoweredFunc* out);

/*! \brief Whether TryDepthwiseConv2dNchwc takes the conv on `target`: one tap row's weight
 * vectors and a tile in the registers (plus three working registers) and few border rows (large
 * pads and dilations make many); convs it cannot take are left in NCHW by the layout pass. */
bool DepthwiseNchwcApplies(const ConvShape& s, const Target& target);

/*! \brief Whether a depthwise kernel with `registers` vector registers keeps every tap's weight
 * vector in one for a whole task, beside at least half a tile of `columns` accumulators; where
 * not, the blocked depthwise kernel reads the taps from memory per tile. */
bool DepthwiseTapsHeld(const ConvShape& s, int64_t registers, int64_t columns);

/*!
 * \brief MaxPool (without Indices), AveragePool (2-D, dilation 1) and GlobalMaxPool /
 * GlobalAveragePool on float32, first in the group and followed only by elementwise/broadcast
 * nodes: parallel over planes, rows reduced through a stride-phase-split row buffer so every
 * vector loop reads contiguous floats without bounds checks (borders take a guarded scalar path);
 * global pools keep a vector of partial results. Portable (no per-target blocking). Returns false
 * (and leaves *out alone) when the group does not fit.
 */
bool TryPool2d(const FusedGroup& group, const lower::ScheduleOptions& opts,
               lower::LoweredFunc* out);

/*!
 * \brief A MaxPool (2-D, dilation 1, no Indices) in NCHW[x]c first in its group, followed by
 * elementwise nodes: a vector max over each window's taps per output pixel, the epilogue applied
 * to it in registers (pool2d_nchwc.cc). TryPool2d hands blocked pools to it.
 */
bool TryMaxPool2dNchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                       lower::LoweredFunc* out);

/*! \brief A GlobalAveragePool / GlobalMaxPool of float32 data in NCHW[x]c first in its group,
 * followed by elementwise nodes: a block's pixels summed (maxed) as vectors, the epilogue in
 * registers (pool2d_nchwc.cc). TryPool2d hands blocked global pools to it. */
bool TryGlobalPoolNchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        lower::LoweredFunc* out);

/*! \brief A float32 LayoutTransform between NCHW and NCHW[x]c (x = 4, 8 or 16, at most the
 * target's float lanes) first in its group, as register transposes of x-by-x tiles; an epilogue
 * on the blocked side runs in registers (layout_transform.cc). */
bool TryLayoutTransform(const FusedGroup& group, const lower::ScheduleOptions& opts,
                        lower::LoweredFunc* out);

/*! \brief A float32 Softmax over its last axis (rows at least a vector long) alone in its group,
 * a row at a time: maximum, exp and sum, scaling, the row in cache throughout (softmax.cc). */
bool TrySoftmax(const FusedGroup& group, const lower::ScheduleOptions& opts,
                lower::LoweredFunc* out);

/*! \brief True when conv2d_1x1.cc takes a conv of this shape: 1x1, stride 1, no padding, and
 * a plane of at least 4 * p.lanes positions. */
bool Conv1x1Applies(const ConvShape& s, const Conv2dParams& p);
/*! \brief Output channels per tile of conv2d_1x1.cc: the largest of p.oc_block, 4, 2, 1 that
 * divides the channels per group (also its weight packing block). */
int64_t Conv1x1OcBlock(const ConvShape& s, int64_t most);

/*!
 * \brief 1x1 convolution over big planes as a matrix product with the epilogue applied in
 * registers (see conv2d_1x1.cc); reads OIHW or packed weights. Returns false (and leaves *out
 * alone) when the group does not fit.
 */
bool TryConv2d1x1(const FusedGroup& group, const lower::ScheduleOptions& opts,
                  const Conv2dParams& p, lower::LoweredFunc* out);

/*!
 * \brief 2-D convolution (any dilation, float32, output channels per group a multiple of
 * p.lanes) with output channels in the SIMD lanes, NCHW or NCHW[x]c in and out: see
 * conv2d_nchw_ocvec.cc. Returns false (and leaves *out alone) when the group does not fit.
 */
bool TryConv2dOcVec(const FusedGroup& group, const lower::ScheduleOptions& opts,
                    const Conv2dOcVecParams& p, lower::LoweredFunc* out);

/*!
 * \brief A 3 x 3 stride-1 conv in NCHW[x]c whose weights WinogradConvWeights transformed
 * (kWinogradTileAttr), followed by elementwise/broadcast epilogue nodes, as Winograd F(m x m,
 * 3 x 3) with p's register blocking: see conv2d_winograd.cc. TryConv2dOcVec hands such groups to
 * it. Returns false (and leaves *out alone) when the group does not fit.
 */
bool TryConv2dWinograd(const FusedGroup& group, const lower::ScheduleOptions& opts,
                       const Conv2dOcVecParams& p, lower::LoweredFunc* out);

/*! \brief Bytes of V and M (the transformed input and products) one band of the Winograd
 * kernel's tile rows may take on target t (nullptr: a 1 MiB default): half the last-level cache,
 * or L2 where the target has no L3. */
int64_t WinogradBandBytes(const Target* t);

/*! \brief Output tile m of the Winograd kernel for a conv of this shape under the
 * channels-in-lanes entry p (4 or 2), or 0 when the direct kernel should run it: not 3 x 3
 * stride 1 ungrouped NCHW[x]c, too few channels, or a plane the tiles would cover wastefully. */
int64_t WinogradTileFor(const ConvShape& s, const Conv2dOcVecParams& p);

/*! \brief Output columns per channels-in-lanes tile for output width `ow` and block `most`: the
 * largest divisor of `ow` in [most/2, most] (no tail tile), else min(ow, most). */
int64_t ChooseOwBlock(int64_t ow, int64_t most);

/*! \brief True when conv2d_int8.cc takes this conv as planned (before its weights are packed): an
 * integer conv (kDataZeroPointAttr) of 2-D NCHW 8-bit data, ungrouped, strides up to
 * 4, with a constant 4-D 8-bit weight, a constant int32 bias or none, and sums that cannot
 * overflow int32; with p.saturating_pairs, also weights whose pairs of products (input channels
 * 2k and 2k + 1 at one tap) stay within int16 for any data byte. */
bool Conv2dInt8Applies(const Graph& g, const Node& conv, const Conv2dInt8Params& p);

/*! \brief Whether the entry of `p` is the better of the int8 conv forms for this conv (one
 * Conv2dInt8Applies takes) in NCHW: always for the channels-in-lanes form, which the table lists
 * after the pixels-in-lanes one; for that, Conv2dInt8PixelsPays. A forced entry (EMBER_SCHEDULE)
 * takes every conv it applies to. (Where the output channels fill the channels form's block, the
 * layout pass makes the output blocked, which only that form writes.) */
bool Conv2dInt8Pays(const Graph& g, const Node& conv, const Conv2dInt8Params& p);

/*!
 * \brief An integer conv with weights PackConvWeights packed for it (kPackedInt8WeightAttr),
 * followed by elementwise/broadcast epilogue nodes (the requantization of a QLinearConv): 8-bit
 * dot products of four input channels into int32 register tiles, see conv2d_int8.cc. Returns
 * false (and leaves *out alone) when the group does not fit.
 */
bool TryConv2dInt8(const FusedGroup& group, const lower::ScheduleOptions& opts,
                   const Conv2dInt8Params& p, lower::LoweredFunc* out);

/*! \brief True when depthwise_conv2d_int8.cc takes this conv: an integer conv
 * (kDataZeroPointAttr) of 2-D NCHW 8-bit data with group = channels = output channels, a constant
 * int8 weight [C][1][KH][KW], a constant int32 bias or none, undilated, strides up to 4. */
bool DepthwiseConv2dInt8Applies(const Graph& g, const Node& conv, const DepthwiseInt8Params& p);

/*! \brief Such a depthwise integer conv followed by elementwise/broadcast epilogue nodes (the
 * requantization), the epilogue in registers: NCHW in and out (depthwise_conv2d_int8.cc), or
 * NCHW[lanes]c (TryDepthwiseConv2dInt8Nchwc). */
bool TryDepthwiseConv2dInt8(const FusedGroup& group, const lower::ScheduleOptions& opts,
                            const DepthwiseInt8Params& p, lower::LoweredFunc* out);

/*! \brief Whether the blocked kernel takes this depthwise integer conv (NCHW, or already in
 * NCHW[p.lanes]c): the channels fill the blocks, a band of rows that fits the stack, and taps
 * whose float sums stay exact (with p.dot_quads: int8 weights, sums within int32). The layout
 * pass asks it (TableStrategy::ConvLayoutBlock). */
bool DepthwiseConv2dInt8NchwcApplies(const Graph& g, const Node& conv,
                                     const DepthwiseInt8Params& p);

/*! \brief The blocked kernel, data and output in NCHW[p.lanes]c, weights packed [C/x][1][KH][KW]
 * [x]; see depthwise_conv2d_int8_nchwc.cc. */
bool TryDepthwiseConv2dInt8Nchwc(const FusedGroup& group, const lower::ScheduleOptions& opts,
                                 const DepthwiseInt8Params& p, lower::LoweredFunc* out);

/*! \brief Narrowest channel block of the NCHW[x]c layout: one SSE / NEON vector of floats. */
constexpr int64_t kMinLayoutBlock = 4;

/*! \brief Tasks a parallel kernel offers at least where its shape allows (two threads x four
 * chunks, or eight threads): fewer leave a thread idle for a task's time at the end. */
constexpr int64_t kMinTasks = 8;

/*! \brief A table entry's channels-in-lanes parameters for a conv of this shape: for an
 * NCHW[x]c output narrower than the entry's vectors (channels that do not fill them), vectors of
 * x floats with the same register block; otherwise p itself. */
Conv2dOcVecParams BlockedOcVecParams(const Conv2dOcVecParams& p, const ConvShape& s);

/*! \brief Output channels per tile of the channels-in-lanes kernel for this shape: one, two or
 * three vectors of p.lanes (also its weight packing block); 0 when the channels per group do not
 * fill a vector. */
int64_t OcVecOcBlock(const ConvShape& s, const Conv2dOcVecParams& p);

/*! \brief The channels-in-lanes kernel's output channels per tile (and weight packing block)
 * under table entry `entry`: OcVecOcBlock of its blocked parameters, or, where that is one block
 * narrower than the entry's vectors, the most blocks up to three of its vectors' worth that divide
 * the channels (40 in 8-wide blocks on AVX-512: 16 + 16 + 8 lanes, not one 8-lane vector). */
int64_t OcVecTileOcBlock(const ConvShape& s, const Conv2dOcVecParams& entry);

/*! \brief Output columns per channels-in-lanes tile of `vectors` vectors before tuning: the
 * entry's ow_block, scaled down for more vectors than the entry's oc_vectors. */
int64_t OcVecOwBlock(const Conv2dOcVecParams& p, int64_t vectors);

/*! \brief The shape the channels-in-lanes tiles see for conv `s` with `ow_block` columns per
 * tile: `s` itself, or, for a 1x1 conv that reads its input plane in order (stride 1, unpadded)
 * and whose rows the tiles would not cover whole (a 7-wide row in tiles of 6 ends in a
 * one-column tile, whose two accumulators wait on the FMA latency), one row of all the plane's
 * pixels. Only where the rows are not chunked for the cache (CacheRowChunk) and the epilogue
 * reads the plane flat (`epilogue_reads_flat`); without a target, `s`. */
ConvShape OcVecTileShape(const ConvShape& s, int64_t ow_block, bool epilogue_reads_flat,
                         const Target* target);

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_SCHEDULE_H_
