// The per-target table of group schedules LowerGroup consults before its default schedule.
#include <cstdlib>
#include <cstring>

#include "conv_group.h"
#include "schedule.h"
#include "tuning.h"

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

std::vector<const ScheduleEntry*> EntriesFor(const Target& target) {
  const char* forced = std::getenv("EMBER_SCHEDULE");
  const bool is_forced = forced != nullptr && *forced != '\0';
  const TargetClass tc = ClassifyTarget(target);
  std::vector<const ScheduleEntry*> out;
  for (const ScheduleEntry& e : ScheduleTable()) {
    if (is_forced ? std::strcmp(forced, e.name) == 0 : e.target == tc) out.push_back(&e);
  }
  return out;
}

const ScheduleEntry* FirstEntryOf(const Target& target, ScheduleKind kind) {
  for (const ScheduleEntry* e : EntriesFor(target)) {
    if (e->kind == kind) return e;
  }
  return nullptr;
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

namespace {

// The conv as a group of its own (how the schedules would see it without an epilogue).
bool MatchLoneConv(const Graph& g, const Node& conv, ConvGroup* m) {
  FusedGroup alone;
  alone.graph = &g;
  alone.nodes = {&conv};
  for (int v : conv.inputs) {
    if (v != kAbsentValue) alone.inputs.push_back(v);
  }
  alone.outputs = {conv.outputs.at(0)};
  return MatchConvGroup(alone, m);
}

// The first channels-in-lanes entry for the target (the kernel of NCHW[x]c convs), or null.
const ScheduleEntry* OcVecEntry(const Target& target) {
  return FirstEntryOf(target, ScheduleKind::kConv2dOcVec);
}

bool IsDepthwise(const ConvShape& s) {
  return s.group == s.c && s.oc == s.c && s.icg == 1 && s.ocg == 1;
}

}  // namespace

int64_t ConvLayoutBlock(const Graph& g, const Node& conv, const Target& target) {
  ConvGroup m;
  if (SchedulesDisabled() || !MatchLoneConv(g, conv, &m) || !IsNchw(m.s)) return 0;
  const ScheduleEntry* e = OcVecEntry(target);
  if (e == nullptr) return 0;
  if (!IsDepthwise(m.s) && m.s.group != 1) return 0;
  // A depthwise conv whose taps do not fit the registers would run blocked in the slow default
  // schedule; in NCHW its own schedule takes it.
  if (IsDepthwise(m.s) && !DepthwiseNchwcTapsFit(m.s, target)) return 0;
  // The widest vector (the target's, halved down to 4 floats) the output channels fill.
  for (int64_t block = e->conv_ocvec.lanes; block >= kMinLayoutBlock; block /= 2) {
    if (m.s.oc % block == 0) return block;
  }
  return 0;
}

int64_t ConvWinogradTile(const Graph& g, const Node& conv, const Target& target, int64_t* block) {
  ConvGroup m;
  if (SchedulesDisabled() || !MatchLoneConv(g, conv, &m)) return 0;
  const ScheduleEntry* e = OcVecEntry(target);
  if (e == nullptr) return 0;
  const int64_t tile = WinogradTileFor(m.s, e->conv_ocvec);
  if (tile != 0) *block = OcVecOcBlock(m.s, BlockedOcVecParams(e->conv_ocvec, m.s));
  return tile;
}

int64_t ConvWeightIcBlock(const Graph& g, const Node& conv) {
  ConvGroup m;
  if (!MatchLoneConv(g, conv, &m) || m.s.group != 1) return 0;
  return m.s.in_block;
}

int64_t ConvWeightBlock(const Graph& g, const Node& conv, const Target& target) {
  ConvGroup m;
  if (SchedulesDisabled() || !MatchLoneConv(g, conv, &m)) return 0;
  if (!IsNchw(m.s)) {
    // Blocked depthwise weights: [C/x][1][KH][KW][x]; other blocked convs: the ocvec packing.
    if (IsDepthwise(m.s)) return m.s.out_block;
    const ScheduleEntry* e = OcVecEntry(target);
    return e == nullptr ? 0 : OcVecOcBlock(m.s, BlockedOcVecParams(e->conv_ocvec, m.s));
  }
  // The first entry that takes the conv decides, as in TryGroupSchedules.
  for (const ScheduleEntry* e : EntriesFor(target)) {
    switch (e->kind) {
      case ScheduleKind::kDepthwiseConv2d:
      case ScheduleKind::kDense:
        continue;  // reads OIHW weights, or no conv at all
      case ScheduleKind::kConv2d1x1:
        if (!Conv1x1Applies(m.s, e->conv)) continue;
        return Conv1x1OcBlock(m.s, e->conv.oc_block);
      case ScheduleKind::kConv2dOcVec:
        return OcVecOcBlock(m.s, e->conv_ocvec);
      case ScheduleKind::kConv2dWide:
        return 0;
    }
  }
  return 0;
}

}  // namespace schedule

namespace lower {

bool TryGroupSchedules(const FusedGroup& group, const ScheduleOptions& opts, LoweredFunc* out) {
  if (opts.target == nullptr || schedule::SchedulesDisabled()) return false;
  if (schedule::TryPool2d(group, opts, out)) return true;
  for (const schedule::ScheduleEntry* e : schedule::EntriesFor(*opts.target)) {
    if (schedule::TryEntry(*e, group, opts, out)) return true;
  }
  return false;
}

}  // namespace lower
}  // namespace ember::compiler
