// The per-target table of group schedules (TableStrategy offers groups to its entries).
#include <algorithm>

#include "schedule.h"
#include "tuning.h"

namespace ember::compiler::schedule {

TargetClass ClassifyTarget(const Target& t) {
  const std::string& tr = t.triple;
  if (tr.rfind("x86_64", 0) == 0 || tr.rfind("i686", 0) == 0) {
    if (t.vector_bits >= 512) return TargetClass::kAvx512;
    if (t.vector_bits >= 256) return TargetClass::kAvx2;
    return TargetClass::kSse;
  }
  if (tr.rfind("aarch64", 0) == 0 || tr.rfind("arm64", 0) == 0) return TargetClass::kNeon64;
  if (tr.rfind("arm", 0) == 0 || tr.rfind("thumb", 0) == 0) {
    return t.features.find("+neon") != std::string::npos ? TargetClass::kNeon32
                                                         : TargetClass::kGeneric;
  }
  return TargetClass::kGeneric;
}

namespace {

// One builder per kernel kind: a row sets its kind's parameters only, each by name.
template <typename Params>
ScheduleEntry Entry(const char* name, TargetClass target, ScheduleKind kind,
                    Params ScheduleEntry::*params, const Params& p) {
  ScheduleEntry e{};
  e.name = name;
  e.target = target;
  e.kind = kind;
  e.*params = p;
  return e;
}

ScheduleEntry Depthwise(const char* name, TargetClass target, DepthwiseParams p) {
  // The entry's own register file: forced onto another target (EMBER_SCHEDULE), it tiles the same.
  p.vector_registers = VectorRegisters(target);
  return Entry(name, target, ScheduleKind::kDepthwiseConv2d, &ScheduleEntry::depthwise, p);
}

ScheduleEntry ExpandDw(const char* name, TargetClass target, const ExpandDepthwiseParams& p) {
  return Entry(name, target, ScheduleKind::kExpandDepthwise, &ScheduleEntry::expand_dw, p);
}

ScheduleEntry Conv1x1(const char* name, TargetClass target, const Conv2dParams& p) {
  return Entry(name, target, ScheduleKind::kConv2d1x1, &ScheduleEntry::conv, p);
}

ScheduleEntry ConvWide(const char* name, TargetClass target, const Conv2dParams& p) {
  return Entry(name, target, ScheduleKind::kConv2dWide, &ScheduleEntry::conv, p);
}

ScheduleEntry ConvOcVec(const char* name, TargetClass target, const Conv2dOcVecParams& p) {
  return Entry(name, target, ScheduleKind::kConv2dOcVec, &ScheduleEntry::conv_ocvec, p);
}

ScheduleEntry ConvInt8(const char* name, TargetClass target, const Conv2dInt8Params& p) {
  return Entry(name, target, ScheduleKind::kConv2dInt8, &ScheduleEntry::conv_int8, p);
}

ScheduleEntry DwInt8(const char* name, TargetClass target, const DepthwiseInt8Params& p) {
  return Entry(name, target, ScheduleKind::kDepthwiseConv2dInt8, &ScheduleEntry::dw_int8, p);
}

ScheduleEntry Dense(const char* name, TargetClass target, const DenseParams& p) {
  return Entry(name, target, ScheduleKind::kDense, &ScheduleEntry::dense, p);
}

// Whether the target makes an entry's dot products on `lanes` int32 sums: with its dot
// instruction (u8 x s8, or s8 x s8 where the entry flips the data), or with widening multiplies
// where the entry asks for those (or has that dot: a forced entry on the host).
bool DotRunsOn(const Target& target, int64_t lanes, bool signed_dot, bool widening_dot) {
  const bool dot = target.int8_dot_bits >= lanes * 32 && (signed_dot || target.int8_dot_u8s8);
  return dot || (widening_dot && target.int8_widening_bits >= lanes * 32);
}

}  // namespace

const std::vector<ScheduleEntry>& ScheduleTable() {
  // Depthwise convs first (the conv kernels would take them at a fraction of the speed): one
  // vector of output columns per row step, the full register width of each target class. Then
  // 1x1 convs on big planes, then the channels-in-lanes kernels (AVX-512: 14 columns x 2 zmm =
  // 28 accumulators; register blocks must fit the register file with room for the loaded and
  // broadcast operands); the wide kernel takes the convs they refuse (output channels per group
  // not a multiple of the vector width). AArch64 multiplies by a lane of a register (fmla by
  // element), so its entries load four reduction steps' inputs at once (LaneSteps); x86 folds
  // each broadcast into its FMA instead, and ARMv7's by-lane multiply does not fuse.
  using T = TargetClass;
  using DW = DepthwiseParams;
  using C = Conv2dParams;
  using OcVec = Conv2dOcVecParams;
  static const std::vector<ScheduleEntry> table = {
      // Integer convs (quantized models), where the target has vpdpbusd: 14 columns x 2 vectors
      // of 16 int32 sums, as the float kernel's block (6 x 2 of 8 in AVX-VNNI's 16 registers).
      // Without it, vpmaddubsw + vpmaddwd, for weights whose pairs of products fit int16 (the
      // quantizer's 7-bit weights), with one register for the ones and one for the pairs. Each
      // first in its pixels-in-lanes form, which takes the convs it runs faster
      // (Conv2dInt8Pays: those with shallow reductions or planes its vectors fill, such as
      // MobileNet's 1x1 convs and 3-channel stems): 3 vectors of pixels x 8 channels (2 x 4 in
      // 16 registers), the data vectors loaded once per step.
      ConvInt8("conv2d_int8_pixels_avx512vnni", T::kAvx512,
               Conv2dInt8Params().Lanes(16).PixelsInLanes(3, 8)),
      ConvInt8("conv2d_int8_avx512vnni", T::kAvx512,
               Conv2dInt8Params().Lanes(16).OcVectors(2).OwBlock(14)),
      ConvInt8("conv2d_int8_pixels_avx512bw", T::kAvx512,
               Conv2dInt8Params().Lanes(16).PixelsInLanes(3, 8).SaturatingPairs()),
      ConvInt8("conv2d_int8_avx512bw", T::kAvx512,
               Conv2dInt8Params().Lanes(16).OcVectors(2).OwBlock(12).SaturatingPairs()),
      ConvInt8("conv2d_int8_pixels_avxvnni", T::kAvx2,
               Conv2dInt8Params().Lanes(8).PixelsInLanes(2, 4)),
      ConvInt8("conv2d_int8_avxvnni", T::kAvx2,
               Conv2dInt8Params().Lanes(8).OcVectors(2).OwBlock(6)),
      ConvInt8("conv2d_int8_pixels_avx2", T::kAvx2,
               Conv2dInt8Params().Lanes(8).PixelsInLanes(2, 4).SaturatingPairs()),
      ConvInt8("conv2d_int8_avx2", T::kAvx2,
               Conv2dInt8Params().Lanes(8).OcVectors(2).OwBlock(5).SaturatingPairs()),
      // Depthwise: blocked, four taps of a row per vpdpbusd where the target has it, else one
      // tap per float multiply-add; NCHW data in int32 lanes along the width.
      DwInt8("depthwise_conv2d_int8_avx512vnni", T::kAvx512,
             DepthwiseInt8Params().Lanes(16).DotQuads()),
      DwInt8("depthwise_conv2d_int8_avx512", T::kAvx512, DepthwiseInt8Params().Lanes(16)),
      DwInt8("depthwise_conv2d_int8_avxvnni", T::kAvx2, DepthwiseInt8Params().Lanes(8).DotQuads()),
      DwInt8("depthwise_conv2d_int8_avx2", T::kAvx2, DepthwiseInt8Params().Lanes(8)),
      // aarch64: with i8mm, usdot takes the unsigned data as it is; with dotprod alone, sdot
      // takes it flipped to signed. 6 columns x 4 vectors of 4 sums: 24 accumulators, 4 weight
      // vectors and a broadcast of the 32 registers; the pixels form 4 vectors of pixels x 6
      // channels, the same count.
      ConvInt8("conv2d_int8_pixels_neon_i8mm", T::kNeon64,
               Conv2dInt8Params().Lanes(4).PixelsInLanes(4, 6)),
      ConvInt8("conv2d_int8_neon_i8mm", T::kNeon64,
               Conv2dInt8Params().Lanes(4).OcVectors(4).OwBlock(6)),
      ConvInt8("conv2d_int8_pixels_neon_dotprod", T::kNeon64,
               Conv2dInt8Params().Lanes(4).PixelsInLanes(4, 6).SignedDot()),
      ConvInt8("conv2d_int8_neon_dotprod", T::kNeon64,
               Conv2dInt8Params().Lanes(4).OcVectors(4).OwBlock(6).SignedDot()),
      DwInt8("depthwise_conv2d_int8_neon_i8mm", T::kNeon64,
             DepthwiseInt8Params().Lanes(4).DotQuads()),
      DwInt8("depthwise_conv2d_int8_neon_dotprod", T::kNeon64,
             DepthwiseInt8Params().Lanes(4).DotQuads().SignedDot()),
      // Without a dot (Cortex-A53, A72): sdot's arithmetic from widening multiplies, in the
      // channels form smull + smlal + sadalp over weights packed in halves order (3 instructions
      // where sdot takes 1), in the pixels form smull + sadalp per half (4). 5 columns x 4
      // vectors: 4 or 6 columns take more instructions per step (bench/int8_dots.py).
      ConvInt8("conv2d_int8_pixels_neon", T::kNeon64,
               Conv2dInt8Params().Lanes(4).PixelsInLanes(4, 5).WideningDot()),
      ConvInt8("conv2d_int8_neon", T::kNeon64,
               Conv2dInt8Params().Lanes(4).OcVectors(4).OwBlock(5).WideningDot()),
      DwInt8("depthwise_conv2d_int8_neon", T::kNeon64, DepthwiseInt8Params().Lanes(4)),
      // ARMv7 NEON: the same in its 16 registers; 3 columns x 2 vectors, as 4 spill the products
      // LLVM schedules ahead (7.25 instructions per step against 6.50; bench/int8_dots.py).
      ConvInt8("conv2d_int8_pixels_neon32", T::kNeon32,
               Conv2dInt8Params().Lanes(4).PixelsInLanes(2, 4).WideningDot()),
      ConvInt8("conv2d_int8_neon32", T::kNeon32,
               Conv2dInt8Params().Lanes(4).OcVectors(2).OwBlock(3).WideningDot()),
      DwInt8("depthwise_conv2d_int8_neon32", T::kNeon32, DepthwiseInt8Params().Lanes(4)),
      // A 1x1 conv and the depthwise conv after it in one kernel (the plan says where): the
      // 1x1 tiles as the channels-in-lanes kernel's (28 zmm accumulators, 12 ymm), the depthwise
      // ones as wide as the registers the taps leave.
      ExpandDw("expand_depthwise_avx512", T::kAvx512,
               ExpandDepthwiseParams().Lanes(16).Tiles(28, 8).VectorBits(512)),
      ExpandDw("expand_depthwise_avx2", T::kAvx2, ExpandDepthwiseParams().Lanes(8).Tiles(12, 4)),
      Depthwise("depthwise_conv2d_avx512", T::kAvx512, DW().Lanes(16).VectorBits(512)),
      Depthwise("depthwise_conv2d_avx2", T::kAvx2, DW().Lanes(8)),
      Depthwise("depthwise_conv2d_sse", T::kSse, DW().Lanes(4)),
      // 8 pixels per tile on AArch64 too: 16 would fit its 32 registers on paper, but LLVM's
      // schedule then spills (fma_share.py: 54% vs 55%, stride 2 42% vs 46%). Small planes
      // (7x7, 14x14) take several rows per task. Tap rows over 1008 bytes apart (ldp q's reach)
      // load from bases of their own (DepthwiseParams::row_streams_past). Row pairs tile 6
      // columns of two rows where a row holds two such tiles (12 accumulators: fma_share.py
      // 61-63% at 112x112 to 14x14, against 59-61.5% in tiles of 4x2).
      Depthwise("depthwise_conv2d_neon", T::kNeon64,
                DW().Lanes(4).Tile(8, 64).RowStreamsPast(1008).RowPairs(6)),
      Depthwise("depthwise_conv2d_neon32", T::kNeon32, DW().Lanes(4)),
      Conv1x1("conv2d_1x1_avx512", T::kAvx512,
              C().Lanes(64).OcBlock(4).SimdLanes(16).VectorBits(512)),
      Conv1x1("conv2d_1x1_avx2", T::kAvx2, C().Lanes(16).OcBlock(4).SimdLanes(8)),
      Conv1x1("conv2d_1x1_sse", T::kSse, C().Lanes(8).OcBlock(4).SimdLanes(4)),
      Conv1x1("conv2d_1x1_neon", T::kNeon64, C().Lanes(16).OcBlock(4).SimdLanes(4)),
      Conv1x1("conv2d_1x1_neon32", T::kNeon32, C().Lanes(8).OcBlock(4).SimdLanes(4)),
      ConvOcVec("conv2d_nchw_ocvec_avx512", T::kAvx512,
                OcVec().Lanes(16).OcVectors(2).OwBlock(14).VectorBits(512)),
      ConvOcVec("conv2d_nchw_ocvec_avx2", T::kAvx2, OcVec().Lanes(8).OcVectors(2).OwBlock(6)),
      ConvOcVec("conv2d_nchw_ocvec_sse", T::kSse, OcVec().Lanes(4).OcVectors(2).OwBlock(6)),
      // A one-pixel output (SE convs) takes panels of up to 14 vectors (cf. the NEON GEMV's 8).
      ConvOcVec("conv2d_nchw_ocvec_neon", T::kNeon64,
                OcVec().Lanes(4).OcVectors(2).OwBlock(12).LaneSteps(4).SinglePixelVectors(14)),
      ConvOcVec("conv2d_nchw_ocvec_neon32", T::kNeon32, OcVec().Lanes(4).OcVectors(2).OwBlock(6)),
      ConvWide("conv2d_nchw_wide_avx512", T::kAvx512, C().Lanes(64).OcBlock(4).VectorBits(512)),
      ConvWide("conv2d_nchw_wide_avx2", T::kAvx2, C().Lanes(16).OcBlock(4)),
      ConvWide("conv2d_nchw_wide_sse", T::kSse, C().Lanes(8).OcBlock(4)),
      ConvWide("conv2d_nchw_wide_neon", T::kNeon64, C().Lanes(16).OcBlock(4)),
      ConvWide("conv2d_nchw_wide_neon32", T::kNeon32, C().Lanes(8).OcBlock(4)),
      // Dense products: rows x vectors accumulators, plus the weight vectors and a broadcast,
      // within the register file (6 x 4 + 4 + 1 of 32; 6 x 2 + 2 + 1 of 16). A NEON GEMV takes
      // panels of 8 vectors: a weight feeds one FMA whatever the width, A's load and the loop
      // control are spread over twice the FMAs.
      Dense("dense_avx512", T::kAvx512, DenseParams().Lanes(16).Rows(6).Vectors(4).VectorBits(512)),
      Dense("dense_avx2", T::kAvx2, DenseParams().Lanes(8).Rows(6).Vectors(2)),
      Dense("dense_sse", T::kSse, DenseParams().Lanes(4).Rows(6).Vectors(2)),
      Dense("dense_neon", T::kNeon64,
            DenseParams().Lanes(4).Rows(6).Vectors(4).LaneSteps(4).GemvVectors(8)),
      Dense("dense_neon32", T::kNeon32, DenseParams().Lanes(4).Rows(6).Vectors(2)),
  };
  return table;
}

bool TryEntry(const ScheduleEntry& e, const FusedGroup& group, const lower::ScheduleOptions& opts,
              lower::LoweredFunc* out) {
  switch (e.kind) {
    case ScheduleKind::kExpandDepthwise:
      return TryExpandDepthwise(group, opts, e.expand_dw, out);
    case ScheduleKind::kDepthwiseConv2d:
      return TryDepthwiseConv2d(group, opts, e.depthwise, out);
    case ScheduleKind::kConv2d1x1:
      return TryConv2d1x1(group, opts, e.conv, out);
    case ScheduleKind::kConv2dWide:
      return TryConv2dWide(group, opts, e.conv, out);
    case ScheduleKind::kConv2dOcVec:
      return TryConv2dOcVec(group, opts, e.conv_ocvec, out);
    case ScheduleKind::kDense:
      return TryDense(group, opts, e.dense, out);
    case ScheduleKind::kConv2dInt8:
      return TryConv2dInt8(group, opts, e.conv_int8, out);
    case ScheduleKind::kDepthwiseConv2dInt8:
      return TryDepthwiseConv2dInt8(group, opts, e.dw_int8, out);
  }
  return false;
}

bool EntryRunsOn(const ScheduleEntry& e, const Target& target) {
  if (e.kind == ScheduleKind::kConv2dInt8) {
    const Conv2dInt8Params& p = e.conv_int8;
    if (p.saturating_pairs) return target.int8_pair_bits >= p.lanes * 32;
    return DotRunsOn(target, p.lanes, p.signed_dot, p.widening_dot);
  }
  if (e.kind == ScheduleKind::kDepthwiseConv2dInt8) {
    const DepthwiseInt8Params& p = e.dw_int8;
    if (p.dot_quads) return DotRunsOn(target, p.lanes, p.signed_dot, false);
    return std::max({target.int8_dot_bits, target.int8_pair_bits, target.int8_widening_bits}) >=
           p.lanes * 32;
  }
  return true;
}

}  // namespace ember::compiler::schedule
