// The per-target table of group schedules (TableStrategy offers groups to its entries).
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

const std::vector<ScheduleEntry>& ScheduleTable() {
  // Depthwise convs first (the conv kernels would take them at a fraction of the speed): one
  // vector of output columns per row step, the full register width of each target class. Then
  // 1x1 convs on big planes, then the channels-in-lanes kernels (AVX-512: 14 columns x 2 zmm =
  // 28 accumulators; register blocks must fit the register file with room for the loaded and
  // broadcast operands); the wide kernel takes the convs they refuse (output channels per group
  // not a multiple of the vector width).
  using K = ScheduleKind;
  using DW = DepthwiseParams;
  static const std::vector<ScheduleEntry> table = {
      {"depthwise_conv2d_avx512",
       TargetClass::kAvx512,
       K::kDepthwiseConv2d,
       {},
       {},
       DW{16, 512},
       {}},
      {"depthwise_conv2d_avx2", TargetClass::kAvx2, K::kDepthwiseConv2d, {}, {}, DW{8, 0}, {}},
      {"depthwise_conv2d_sse", TargetClass::kSse, K::kDepthwiseConv2d, {}, {}, DW{4, 0}, {}},
      {"depthwise_conv2d_neon", TargetClass::kNeon64, K::kDepthwiseConv2d, {}, {}, DW{4, 0}, {}},
      {"depthwise_conv2d_neon32", TargetClass::kNeon32, K::kDepthwiseConv2d, {}, {}, DW{4, 0}, {}},
      {"conv2d_1x1_avx512",
       TargetClass::kAvx512,
       K::kConv2d1x1,
       Conv2dParams{64, 4, 512, 16},
       {},
       {},
       {}},
      {"conv2d_1x1_avx2", TargetClass::kAvx2, K::kConv2d1x1, Conv2dParams{16, 4, 0, 8}, {}, {}, {}},
      {"conv2d_1x1_sse", TargetClass::kSse, K::kConv2d1x1, Conv2dParams{8, 4}, {}, {}, {}},
      {"conv2d_1x1_neon", TargetClass::kNeon64, K::kConv2d1x1, Conv2dParams{16, 4}, {}, {}, {}},
      {"conv2d_1x1_neon32", TargetClass::kNeon32, K::kConv2d1x1, Conv2dParams{8, 4}, {}, {}, {}},
      {"conv2d_nchw_ocvec_avx512",
       TargetClass::kAvx512,
       K::kConv2dOcVec,
       {},
       {16, 2, 14, 512},
       {},
       {}},
      {"conv2d_nchw_ocvec_avx2", TargetClass::kAvx2, K::kConv2dOcVec, {}, {8, 2, 6, 0}, {}, {}},
      {"conv2d_nchw_ocvec_sse", TargetClass::kSse, K::kConv2dOcVec, {}, {4, 2, 6, 0}, {}, {}},
      {"conv2d_nchw_ocvec_neon", TargetClass::kNeon64, K::kConv2dOcVec, {}, {4, 2, 12, 0}, {}, {}},
      {"conv2d_nchw_ocvec_neon32", TargetClass::kNeon32, K::kConv2dOcVec, {}, {4, 2, 6, 0}, {}, {}},
      {"conv2d_nchw_wide_avx512",
       TargetClass::kAvx512,
       K::kConv2dWide,
       Conv2dParams{64, 4, 512},
       {},
       {},
       {}},
      {"conv2d_nchw_wide_avx2",
       TargetClass::kAvx2,
       K::kConv2dWide,
       Conv2dParams{16, 4},
       {},
       {},
       {}},
      {"conv2d_nchw_wide_sse", TargetClass::kSse, K::kConv2dWide, Conv2dParams{8, 4}, {}, {}, {}},
      {"conv2d_nchw_wide_neon",
       TargetClass::kNeon64,
       K::kConv2dWide,
       Conv2dParams{16, 4},
       {},
       {},
       {}},
      {"conv2d_nchw_wide_neon32",
       TargetClass::kNeon32,
       K::kConv2dWide,
       Conv2dParams{8, 4},
       {},
       {},
       {}},
      // Dense products: rows x vectors accumulators, plus the weight vectors and a broadcast,
      // within the register file (6 x 4 + 4 + 1 of 32; 6 x 2 + 2 + 1 of 16).
      {"dense_avx512", TargetClass::kAvx512, K::kDense, {}, {}, {}, DenseParams{16, 6, 4, 512}},
      {"dense_avx2", TargetClass::kAvx2, K::kDense, {}, {}, {}, DenseParams{8, 6, 2, 0}},
      {"dense_sse", TargetClass::kSse, K::kDense, {}, {}, {}, DenseParams{4, 6, 2, 0}},
      {"dense_neon", TargetClass::kNeon64, K::kDense, {}, {}, {}, DenseParams{4, 6, 4, 0}},
      {"dense_neon32", TargetClass::kNeon32, K::kDense, {}, {}, {}, DenseParams{4, 6, 2, 0}},
  };
  return table;
}

bool TryEntry(const ScheduleEntry& e, const FusedGroup& group, const lower::ScheduleOptions& opts,
              lower::LoweredFunc* out) {
  switch (e.kind) {
    case ScheduleKind::kDepthwiseConv2d: {
      DepthwiseParams p = e.depthwise;
      p.vector_registers = VectorRegisters(e.target);
      return TryDepthwiseConv2d(group, opts, p, out);
    }
    case ScheduleKind::kConv2d1x1:
      return TryConv2d1x1(group, opts, e.conv, out);
    case ScheduleKind::kConv2dWide:
      return TryConv2dWide(group, opts, e.conv, out);
    case ScheduleKind::kConv2dOcVec:
      return TryConv2dOcVec(group, opts, e.conv_ocvec, out);
    case ScheduleKind::kDense:
      return TryDense(group, opts, e.dense, out);
  }
  return false;
}

}  // namespace ember::compiler::schedule
