// TableStrategy: each conv's and dense product's kernel, chosen from the schedule table in its
// order of preference, with the weight layout that kernel reads.
#include "table_strategy.h"

#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/op_registry.h>

#include <cstring>
#include <set>

#include "conv_group.h"
#include "tuning.h"

namespace ember::compiler::schedule {
namespace {

// The conv as a group of its own (how the schedules see it without an epilogue).
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

bool IsDepthwise(const ConvShape& s) {
  return s.group == s.c && s.oc == s.c && s.icg == 1 && s.ocg == 1;
}

// Whether the kernel of entry e takes a conv of this shape (in its final layout).
bool ConvKernelApplies(const ScheduleEntry& e, const ConvShape& s) {
  switch (e.kind) {
    case ScheduleKind::kExpandDepthwise:  // with its producer only (ChooseConv)
      return false;
    case ScheduleKind::kDepthwiseConv2d:  // NCHW: adjacent taps only (the row buffers)
      return IsDepthwise(s) && (!IsNchw(s) || Undilated(s));
    case ScheduleKind::kConv2d1x1:
      return IsNchw(s) && Conv1x1Applies(s, e.conv);
    case ScheduleKind::kConv2dOcVec:
      return !IsNchw(s) || OcVecOcBlock(s, e.conv_ocvec) > 0;
    case ScheduleKind::kConv2dWide:
      return IsNchw(s) && Undilated(s);
    case ScheduleKind::kDense:
    case ScheduleKind::kConv2dInt8:  // integer convs only (ChooseInt8Conv)
    case ScheduleKind::kDepthwiseConv2dInt8:
      return false;
  }
  return false;
}

// The output-channel block of the packed weights entry e's kernel reads (0: OIHW).
int64_t ConvWeightBlock(const ScheduleEntry& e, const ConvShape& s) {
  switch (e.kind) {
    case ScheduleKind::kExpandDepthwise:  // as the depthwise kernel's, which it falls back on
    case ScheduleKind::kDepthwiseConv2d:  // blocked: [C/x][1][KH][KW][x]
      return IsNchw(s) ? 0 : s.out_block;
    case ScheduleKind::kConv2d1x1:
      return Conv1x1OcBlock(s, e.conv.oc_block);
    case ScheduleKind::kConv2dOcVec:
      return OcVecTileOcBlock(s, e.conv_ocvec);
    case ScheduleKind::kConv2dWide:
    case ScheduleKind::kDense:
    case ScheduleKind::kConv2dInt8:
    case ScheduleKind::kDepthwiseConv2dInt8:
      return 0;
  }
  return 0;
}

// Constant float32 3 x 3 weights whose output channels fill `block`: what the Winograd weight
// transform needs (and a conv that may round its sums: not one marked exact).
bool WinogradWeights(const Graph& g, const Node& conv, int64_t block) {
  const Value& w = g.value(conv.inputs[1]);
  return !conv.HasAttr(kExactSumAttr) && w.is_constant() && w.type.dtype == kFloat32 &&
         w.type.shape.size() == 4 && w.type.shape[2] == 3 && w.type.shape[3] == 3 && block > 0 &&
         w.type.shape[0] % block == 0;
}

}  // namespace

TableStrategy::TableStrategy(const Target& target, const StrategyOptions& options)
    : target_(target), options_(options) {
  if (!options_.schedules) return;
  const bool forced = !options_.forced_schedule.empty();
  const TargetClass tc = ClassifyTarget(target_);
  for (const ScheduleEntry& e : ScheduleTable()) {
    if ((forced ? options_.forced_schedule == e.name : e.target == tc) && EntryRunsOn(e, target_)) {
      entries_.push_back(&e);
    }
  }
}

const ScheduleEntry* TableStrategy::FirstOf(ScheduleKind kind) const {
  for (const ScheduleEntry* e : entries_) {
    if (e->kind == kind) return e;
  }
  return nullptr;
}

int64_t TableStrategy::ConvLayoutBlock(const Graph& g, const Node& conv) const {
  if (conv.HasAttr(kDataZeroPointAttr)) return Int8LayoutBlock(g, conv);
  ConvGroup m;
  if (!options_.blocked_layout || !MatchLoneConv(g, conv, &m) || !IsNchw(m.s)) return 0;
  const ScheduleEntry* e = FirstOf(ScheduleKind::kConv2dOcVec);
  if (e == nullptr) return 0;
  if (!IsDepthwise(m.s) && m.s.group != 1) return 0;
  // A depthwise conv whose taps do not fit the registers would run blocked in the slow default
  // schedule; in NCHW its own schedule takes it.
  if (IsDepthwise(m.s) && !DepthwiseNchwcApplies(m.s, target_)) return 0;
  // The widest vector (the target's, halved down to 4 floats) the output channels fill.
  for (int64_t block = e->conv_ocvec.lanes; block >= kMinLayoutBlock; block /= 2) {
    if (m.s.oc % block == 0) return block;
  }
  return 0;
}

KernelPlan TableStrategy::Choose(const Graph& g, const Node& node) const {
  if (node.op == "Conv") return ChooseConv(g, node);
  if (node.op == "Gemm") return ChooseDense(g, node);
  return KernelPlan{};
}

const ScheduleEntry* TableStrategy::Int8EntryFor(const Graph& g, const Node& conv) const {
  for (const ScheduleEntry* e : entries_) {
    if (e->kind == ScheduleKind::kDepthwiseConv2dInt8 &&
        DepthwiseConv2dInt8Applies(g, conv, e->dw_int8)) {
      return e;
    }
    if (e->kind == ScheduleKind::kConv2dInt8 && Conv2dInt8Applies(g, conv, e->conv_int8) &&
        (!options_.forced_schedule.empty() || Conv2dInt8Pays(g, conv, e->conv_int8))) {
      return e;
    }
  }
  return nullptr;
}

int64_t TableStrategy::Int8LayoutBlock(const Graph& g, const Node& conv) const {
  // A dynamically quantized conv (its data's zero point computed at run time) writes NCHW: its
  // sums meet a zero-point correction broadcast over the channels and then the whole-tensor
  // min / max of the next DynamicQuantizeLinear, so a blocked output would be transformed back
  // at once (IS-Net quint8: 125 transforms, 1.4x its NCHW time).
  if (!options_.blocked_layout || !conv.HasInput(1) || conv.HasInput(kDataZeroPointInput)) {
    return 0;
  }
  const int64_t channels = g.value(conv.inputs[1]).type.shape.at(0);
  auto fills = [&](int64_t lanes) { return lanes >= kMinLayoutBlock && channels % lanes == 0; };
  for (const ScheduleEntry* e : entries_) {
    if (e->kind == ScheduleKind::kDepthwiseConv2dInt8 &&
        DepthwiseConv2dInt8Applies(g, conv, e->dw_int8)) {
      const int64_t lanes = e->dw_int8.lanes;
      return fills(lanes) && DepthwiseConv2dInt8NchwcApplies(g, conv, e->dw_int8) ? lanes : 0;
    }
    if (e->kind != ScheduleKind::kConv2dInt8 || !Conv2dInt8Applies(g, conv, e->conv_int8)) {
      continue;
    }
    // Channels in the lanes write their own block, pixels in the lanes NCHW rows. Where the
    // output channels fill the block, the channels form (the entry after the pixels one) is
    // chosen: blocked, its epilogue runs in registers instead of through a transposing pass, and
    // the depthwise convs between such convs run blocked too (whole models 0.94x (MobileNetV2
    // int8) and 0.97x (ResNet-18 int8) their time with the pixels form kept wherever
    // Conv2dInt8Pays picked it, 1 thread, AVX-512 VNNI, 2026-11-27).
    const Conv2dInt8Params& p = e->conv_int8;
    if (p.pixel_vectors == 0) return fills(p.lanes) ? p.lanes : 0;
    if (!options_.forced_schedule.empty() || !fills(p.lanes)) return 0;
  }
  return 0;
}

bool TableStrategy::IntegerConvReadsBlock(const Graph& g, const Node& conv, int64_t block) const {
  const ScheduleEntry* e = block > 0 ? Int8EntryFor(g, conv) : nullptr;
  if (e == nullptr) return false;
  // The dense kernels copy the data into their own byte layout from either; a depthwise one
  // reads the block it writes.
  if (e->kind == ScheduleKind::kConv2dInt8) return block % kInt8DotDepth == 0;
  return block == Int8LayoutBlock(g, conv);
}

KernelPlan TableStrategy::ChooseInt8Conv(const Graph& g, const Node& conv) const {
  KernelPlan plan;
  const ScheduleEntry* e = Int8EntryFor(g, conv);
  if (e == nullptr) return plan;
  plan.kernel = e->name;
  plan.int8_dot = true;
  if (e->kind == ScheduleKind::kDepthwiseConv2dInt8) {
    // NCHW: OIHW as it is; blocked: [C/x][1][KH][KW][x], a tap's x channels one vector.
    plan.weight_block = LayoutBlock(conv.GetString(kOutLayoutAttr, "NCHW"));
    return plan;
  }
  plan.weight_block = e->conv_int8.WeightBlock();
  plan.int8_data_offset = Int8DataOffset(e->conv_int8);
  plan.int8_weight_halves = Int8WeightHalves(e->conv_int8);
  return plan;
}

const Node* TableStrategy::ExpansionOf(const Graph& g, const Node& dw, const ConvShape& s,
                                       const ExpandDepthwiseParams& p) const {
  if (!IsDepthwise(s) || !dw.HasInput(0)) return nullptr;
  // Back from the data through elementwise nodes of the data's shape (an activation: Relu,
  // Clip, x * HardSigmoid(x)) to the one conv they all start from, as FuseOps joins them onto it.
  const std::vector<int> producers = g.Producers();
  const std::vector<std::vector<size_t>> readers = g.Readers();
  const std::vector<int64_t>& shape = g.value(dw.inputs[0]).type.shape;
  std::set<size_t> chain;
  int conv = -1;
  std::vector<int> pending{dw.inputs[0]};
  while (!pending.empty()) {
    const int v = pending.back();
    pending.pop_back();
    const int pi = producers.at(static_cast<size_t>(v));
    if (pi < 0) return nullptr;  // a graph input
    const Node& n = g.nodes()[static_cast<size_t>(pi)];
    if (n.op == "Conv") {
      if (conv >= 0 && conv != pi) return nullptr;
      conv = pi;
      continue;
    }
    if (!chain.insert(static_cast<size_t>(pi)).second) continue;
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    if (def == nullptr || !def->has_compute() || def->Pattern(n) > OpPattern::kBroadcast ||
        n.outputs.size() != 1 || g.value(n.outputs[0]).type.shape != shape) {
      return nullptr;
    }
    for (int in : n.inputs) {
      if (in != kAbsentValue && !g.value(in).is_constant()) pending.push_back(in);
    }
  }
  if (conv < 0) return nullptr;
  const Node& expand = g.nodes()[static_cast<size_t>(conv)];
  // Nothing else reads the conv's result or the chain's values (else it must be stored).
  std::vector<int> values{expand.outputs.at(0)};
  for (size_t ni : chain) values.push_back(g.nodes()[ni].outputs[0]);
  for (int v : values) {
    for (int out : g.outputs()) {
      if (out == v) return nullptr;
    }
    for (size_t r : readers[static_cast<size_t>(v)]) {
      const bool by_dw = &g.nodes()[r] == &dw && v == dw.inputs[0];
      if (!by_dw && chain.count(r) == 0) return nullptr;
    }
  }
  ConvGroup em;
  if (expand.HasAttr(kDataZeroPointAttr) || !MatchLoneConv(g, expand, &em)) return nullptr;
  // The 1x1 conv keeps its own plan (its weights packed for the channels-in-lanes kernel).
  const KernelPlan ep = ChooseConv(g, expand);
  const ScheduleEntry* own = nullptr;
  for (const ScheduleEntry* e : entries_) {
    if (e->name == ep.kernel) own = e;
  }
  if (own == nullptr || own->kind != ScheduleKind::kConv2dOcVec || ep.winograd_tile != 0 ||
      !g.value(expand.inputs[1]).is_constant() ||
      !ExpandDepthwiseFits(em.s, ep.weight_block, s, p, VectorRegisters(ClassifyTarget(target_)))) {
    return nullptr;
  }
  return &expand;
}

KernelPlan TableStrategy::ChooseConv(const Graph& g, const Node& conv) const {
  if (conv.HasAttr(kDataZeroPointAttr)) return ChooseInt8Conv(g, conv);
  KernelPlan plan;
  ConvGroup m;
  if (!MatchLoneConv(g, conv, &m)) return plan;
  for (const ScheduleEntry* e : entries_) {
    if (e->kind == ScheduleKind::kExpandDepthwise && options_.fuse_expansions &&
        ExpansionOf(g, conv, m.s, e->expand_dw) != nullptr) {
      plan.kernel = e->name;
      plan.weight_block = ConvWeightBlock(*e, m.s);
      plan.fused_with_producer = true;
      return plan;
    }
    if (!ConvKernelApplies(*e, m.s)) continue;
    plan.kernel = e->name;
    const int64_t block = ConvWeightBlock(*e, m.s);
    if (e->kind == ScheduleKind::kConv2dOcVec && options_.winograd) {
      const int64_t tile = WinogradTileFor(m.s, e->conv_ocvec);
      if (tile != 0 && WinogradWeights(g, conv, block)) {
        plan.winograd_tile = tile;
        plan.winograd_block = block;
        return plan;
      }
    }
    if (block > 1) {
      plan.weight_block = block;
      if (m.s.group == 1 && m.s.in_block > 1) plan.weight_ic_block = m.s.in_block;
    }
    return plan;
  }
  return plan;
}

KernelPlan TableStrategy::ChooseDense(const Graph& g, const Node& gemm) const {
  KernelPlan plan;
  const ScheduleEntry* e = FirstOf(ScheduleKind::kDense);
  if (e == nullptr || gemm.inputs.size() < 2) return plan;
  plan.kernel = e->name;
  // Panels pay whenever a panel fills: a GEMV reads them too, as one sequential stream where W's
  // rows are N floats apart (a cold weight streams from memory; prefetchers follow a stream).
  const TensorType& a = g.value(gemm.inputs[0]).type;
  const TensorType& w = g.value(gemm.inputs[1]).type;
  const int64_t rows = a.shape.size() == 2 ? a.shape[0] : 0;
  const DenseParams p = DenseParamsForRows(e->dense, rows);
  const int64_t width = p.vectors * p.lanes;
  if (w.shape.size() == 2 && w.shape[1] >= width) plan.dense_panel = width;
  return plan;
}

bool TableStrategy::Schedule(const FusedGroup& group, const lower::ScheduleOptions& opts,
                             lower::LoweredFunc* out) const {
  if (!options_.schedules) return false;
  if (TryPool2d(group, opts, out)) return true;
  if (TryLayoutTransform(group, opts, out)) return true;
  if (TrySoftmax(group, opts, out)) return true;
  // The group's conv or dense product carries its plan (a group built by hand, as in tests, has
  // it chosen here by the same rule).
  // A depthwise conv fused with the 1x1 conv before it names the kernel of both.
  std::string planned;
  for (const Node* n : group.nodes) {
    if (n->op != "Conv" && n->op != "Gemm") continue;
    const KernelPlan plan =
        KernelPlan::IsPlanned(*n) ? KernelPlan::Of(*n) : Choose(*group.graph, *n);
    if (planned.empty() || plan.fused_with_producer) planned = plan.kernel;
  }
  const ScheduleEntry* first = nullptr;
  for (const ScheduleEntry* e : entries_) {
    if (planned == e->name) first = e;
  }
  if (first != nullptr && TryEntry(*first, group, opts, out)) return true;
  for (const ScheduleEntry* e : entries_) {
    if (e != first && TryEntry(*e, group, opts, out)) return true;
  }
  return false;
}

}  // namespace ember::compiler::schedule
