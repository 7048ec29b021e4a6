// The per-target table of group schedules LowerGroup consults before its default schedule.
#include <cstdlib>
#include <cstring>

#include "schedule.h"

namespace ember::compiler {
namespace schedule {

bool SchedulesDisabled() {
  const char* v = std::getenv("EMBER_DISABLE_SCHEDULES");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

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
  // Register blocks must fit the register file with room for the loaded and broadcast operands.
  // Channels-in-lanes kernels come first (AVX-512: 12 columns x 2 zmm = 24 accumulators; ~10%
  // faster on ResNet-18 than the wide kernel on the development host); the wide kernel takes the
  // convs they refuse (output channels per group not a multiple of the vector width).
  using K = ScheduleKind;
  static const std::vector<ScheduleEntry> table = {
      {"conv2d_1x1_avx512", TargetClass::kAvx512, K::kConv2d1x1, Conv2dParams{64, 4, 512, 16}, {}},
      {"conv2d_1x1_avx2", TargetClass::kAvx2, K::kConv2d1x1, Conv2dParams{16, 4, 0, 8}, {}},
      {"conv2d_1x1_sse", TargetClass::kSse, K::kConv2d1x1, Conv2dParams{8, 4}, {}},
      {"conv2d_1x1_neon", TargetClass::kNeon64, K::kConv2d1x1, Conv2dParams{16, 4}, {}},
      {"conv2d_1x1_neon32", TargetClass::kNeon32, K::kConv2d1x1, Conv2dParams{8, 4}, {}},
      {"conv2d_nchw_ocvec_avx512", TargetClass::kAvx512, K::kConv2dOcVec, {}, {16, 2, 14, 512}},
      {"conv2d_nchw_ocvec_avx2", TargetClass::kAvx2, K::kConv2dOcVec, {}, {8, 2, 6, 0}},
      {"conv2d_nchw_ocvec_sse", TargetClass::kSse, K::kConv2dOcVec, {}, {4, 2, 6, 0}},
      {"conv2d_nchw_ocvec_neon", TargetClass::kNeon64, K::kConv2dOcVec, {}, {4, 2, 12, 0}},
      {"conv2d_nchw_ocvec_neon32", TargetClass::kNeon32, K::kConv2dOcVec, {}, {4, 2, 6, 0}},
      {"conv2d_nchw_wide_avx512",
       TargetClass::kAvx512,
       K::kConv2dWide,
       Conv2dParams{64, 4, 512},
       {}},
      {"conv2d_nchw_wide_avx2", TargetClass::kAvx2, K::kConv2dWide, Conv2dParams{16, 4}, {}},
      {"conv2d_nchw_wide_sse", TargetClass::kSse, K::kConv2dWide, Conv2dParams{8, 4}, {}},
      {"conv2d_nchw_wide_neon", TargetClass::kNeon64, K::kConv2dWide, Conv2dParams{16, 4}, {}},
      {"conv2d_nchw_wide_neon32", TargetClass::kNeon32, K::kConv2dWide, Conv2dParams{8, 4}, {}},
  };
  return table;
}

bool TryEntry(const ScheduleEntry& e, const FusedGroup& group, const lower::ScheduleOptions& opts,
              lower::LoweredFunc* out) {
  switch (e.kind) {
    case ScheduleKind::kConv2d1x1:
      return TryConv2d1x1(group, opts, e.conv, out);
    case ScheduleKind::kConv2dWide:
      return TryConv2dWide(group, opts, e.conv, out);
    case ScheduleKind::kConv2dOcVec:
      return TryConv2dOcVec(group, opts, e.conv_ocvec, out);
  }
  return false;
}

}  // namespace schedule

namespace lower {

bool TryGroupSchedules(const FusedGroup& group, const ScheduleOptions& opts, LoweredFunc* out) {
  if (opts.target == nullptr || schedule::SchedulesDisabled()) return false;
  if (schedule::TryPool2d(group, opts, out)) return true;
  if (schedule::TryDepthwiseSchedules(group, opts, out)) return true;
  schedule::TargetClass tc = schedule::ClassifyTarget(*opts.target);
  // EMBER_SCHEDULE=NAME forces one table entry whatever the target (tests and benchmarks run
  // every entry on the host this way; the loop nests are portable, only the blocking differs).
  const char* forced = std::getenv("EMBER_SCHEDULE");
  for (const schedule::ScheduleEntry& e : schedule::ScheduleTable()) {
    if (forced != nullptr && *forced != '\0') {
      if (std::strcmp(forced, e.name) != 0) continue;
    } else if (e.target != tc) {
      continue;
    }
    if (schedule::TryEntry(e, group, opts, out)) return true;
  }
  return false;
}

}  // namespace lower
}  // namespace ember::compiler
