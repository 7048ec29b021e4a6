// FuseOps: TVM's pattern rules applied greedily in topological order. A node joins the group of
// the producer of one of its inputs when that value has no other reader (so the group keeps a
// single tail and no cycle can form) and the patterns allow it:
//   out-elemwise-fusable group (Conv/Gemm/MatMul/pool) + elemwise/broadcast  (bias, Relu, Clip,
//   Add) injective-or-less group + injective-or-less node                           (injective
//   chains) injective-or-less group + reduce node                                      (inputs into
//   a reduction) reduce group + elemwise/broadcast node (reduction epilogue)
// A node that reads both an anchored group (a conv) and a chain of elementwise nodes joins the
// anchored group and takes the chain with it, as TVM's post-dominator fusion does: the residual
// Add of a quantized model then dequantizes its other operand in the conv's epilogue instead of
// a kernel of its own reading the conv's result back in float32. A depthwise conv the strategy
// planned together with the 1x1 conv that produces its data (KernelPlan::fused_with_producer)
// joins that conv's group, so one kernel computes both.
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <algorithm>
#include <map>

namespace ember {
namespace compiler {
namespace {

constexpr size_t kMaxGroupNodes = 64;

struct Building {
  std::vector<size_t> nodes;
  OpPattern master = OpPattern::kElemWise;
  bool has_outewise = false;
};

OpPattern PatternOf(const Node& n) {
  const OpDef* def = OpRegistry::Global()->Find(n.op);
  return def ? def->Pattern(n) : OpPattern::kOpaque;
}

bool CanFuse(const Building& g, OpPattern p) {
  if (g.nodes.size() >= kMaxGroupNodes || p == OpPattern::kOpaque) return false;
  if (g.master == OpPattern::kOpaque) return false;
  if (g.master == OpPattern::kOutEWiseFusable) return p <= OpPattern::kBroadcast;
  if (g.master == OpPattern::kCommReduce) return p <= OpPattern::kBroadcast;
  // master <= injective
  return p <= OpPattern::kCommReduce;
}

// Whether `out`, computed from `in`, has as many elements: in a group anchored on `in`'s producer
// each element of the anchor's result is then computed once.
bool SameElementCount(const Value& out, const Value& in) {
  return out.type.NumElements() == in.type.NumElements();
}

// Group `from`'s nodes appended to group `anchor`'s (still a topological order: they read only
// values from outside and the anchor's), `from` left empty; the anchor stays first, where the
// schedules look for it.
void MoveIntoAnchor(size_t from, int anchor, std::vector<Building>* groups,
                    std::vector<int>* group_of) {
  Building& chain = (*groups)[from];
  for (size_t ni : chain.nodes) (*group_of)[ni] = anchor;
  std::vector<size_t>& into = (*groups)[static_cast<size_t>(anchor)].nodes;
  into.insert(into.end(), chain.nodes.begin(), chain.nodes.end());
  chain.nodes.clear();
}

// True when n would spread an anchored group's value `in` over a larger output (a squeeze-and-
// excitation block's per-channel scale, from a conv on a 1 x 1 plane, times the feature map): in
// the group the anchor's result would be computed once per output element, or by the default
// schedule instead of the anchor's; as a kernel of its own, n broadcasts the finished value.
bool BroadcastsAnchorResult(const Building& g, const Value& in, const Graph& graph, const Node& n) {
  if (g.master != OpPattern::kOutEWiseFusable || n.outputs.size() != 1) return false;
  return !SameElementCount(graph.value(n.outputs[0]), in);
}

// A one-element number the kernel's code can hold as an immediate rather than read from an
// argument: LLVM then folds it (a clamp to [0, 255] becomes min/max instructions, a zero point an
// add of a constant). Anchors (convs, matrix products, pools) keep reading theirs as operands.
bool IsScalarConstant(const Value& v) {
  if (!v.is_constant() || v.constant->NumElements() != 1) return false;
  const DLDataType t = v.type.dtype;
  return t.lanes == 1 && (t.code == kDLFloat || t.code == kDLInt || t.code == kDLUInt);
}

// Whether input i of n holds positions the kernel checks before it runs (a gather's indices,
// OpDef::runtime_indices): the check reads them from the kernel's argument, so a value computed
// inside the kernel would escape it and be clamped in silence. Its producer's group stays apart.
bool IndicesCheckedAtRunTime(const Node& n, size_t i) {
  const OpDef* def = OpRegistry::Global()->Find(n.op);
  return i == 1 && def != nullptr && def->runtime_indices();
}

// Whether input i of n is a scalar constant the kernel holds as an immediate. A gather's index
// stays an argument: the steps of an unrolled recurrence or loop each pick their own time step
// with one, and as immediates they made one distinct kernel per step (256 for a 256-step GRU)
// where as arguments they share one.
bool InlinedOperand(const Node& n, size_t i, const Value& v) {
  return IsScalarConstant(v) && !IndicesCheckedAtRunTime(n, i);
}

// The anchored group (a conv, a matrix product) among `candidates` when every other candidate
// is a chain of elementwise or broadcast nodes the anchor's epilogue can compute too; else -1.
int ChainsJoinAnchor(const std::vector<Building>& groups, const std::vector<int>& candidates) {
  int anchor = -1;
  size_t total = 0;
  for (int c : candidates) {
    const Building& b = groups[static_cast<size_t>(c)];
    total += b.nodes.size();
    if (b.master == OpPattern::kOutEWiseFusable && anchor < 0) {
      anchor = c;
    } else if (b.master > OpPattern::kBroadcast) {
      return -1;
    }
  }
  return candidates.size() > 1 && total < kMaxGroupNodes ? anchor : -1;
}

// The chains among `candidates` that n (elementwise or injective) takes into the first one's
// group: groups of such nodes, each read only by n, that no anchor heads, in input order and as
// many as the group's node cap allows. They are independent of one another (every value inside a
// group has its one reader there, and each chain's last value is n's), so one kernel computes
// them all: an LSTM cell's gates, each a gather and an activation, meet in one product per state
// instead of a kernel per gate, and a Concat copies its inputs' reshapes in its own loops.
std::vector<int> ChainsMeetingInNode(const std::vector<Building>& groups,
                                     const std::vector<int>& candidates, OpPattern p) {
  if (candidates.size() < 2 || p > OpPattern::kInjective ||
      groups[static_cast<size_t>(candidates.front())].master > OpPattern::kInjective) {
    return {};
  }
  std::vector<int> taken;
  size_t total = 1 + groups[static_cast<size_t>(candidates.front())].nodes.size();
  for (size_t k = 1; k < candidates.size(); ++k) {
    const Building& b = groups[static_cast<size_t>(candidates[k])];
    if (b.master > OpPattern::kInjective || total + b.nodes.size() > kMaxGroupNodes) continue;
    total += b.nodes.size();
    taken.push_back(candidates[k]);
  }
  return taken;
}

// The anchored group whose values an elementwise group reads, when every reader of those values
// is in one of the two and no value of the anchored group is a graph output; else -1.
int DiamondAnchor(const Graph& graph, const std::vector<bool>& graph_out,
                  const std::vector<Building>& groups, const std::vector<int>& group_of,
                  const std::vector<int>& producer, const std::vector<std::vector<size_t>>& readers,
                  int h) {
  int anchor = -1;
  for (size_t ni : groups[static_cast<size_t>(h)].nodes) {
    for (int in : graph.nodes()[ni].inputs) {
      if (in == kAbsentValue || producer[static_cast<size_t>(in)] < 0) continue;
      const int g = group_of[static_cast<size_t>(producer[static_cast<size_t>(in)])];
      if (g == h || groups[static_cast<size_t>(g)].master != OpPattern::kOutEWiseFusable) continue;
      if (anchor >= 0 && anchor != g) return -1;
      anchor = g;
    }
  }
  if (anchor < 0) return -1;
  const Building& a = groups[static_cast<size_t>(anchor)];
  if (a.nodes.size() + groups[static_cast<size_t>(h)].nodes.size() > kMaxGroupNodes) return -1;
  for (size_t ni : a.nodes) {
    for (int out : graph.nodes()[ni].outputs) {
      if (graph_out[static_cast<size_t>(out)]) return -1;
      for (size_t r : readers[static_cast<size_t>(out)]) {
        if (group_of[r] != anchor && group_of[r] != h) return -1;
      }
    }
  }
  return anchor;
}

// An elementwise group that reads an anchored group's result more than once (hard-swish on a
// conv, x * HardSigmoid(x): a value with two readers ends the single-reader fusion) joins the
// anchored group when all the result's readers are in it, as TVM's post-dominator fusion joins
// such a diamond: one kernel instead of the conv's store and a pass that reads it back.
void JoinDiamonds(const Graph& graph, const std::vector<bool>& graph_out,
                  const std::vector<int>& producer, const std::vector<std::vector<size_t>>& readers,
                  std::vector<Building>* groups, std::vector<int>* group_of) {
  for (size_t h = 0; h < groups->size(); ++h) {
    Building& chain = (*groups)[h];
    if (chain.nodes.empty() || chain.master > OpPattern::kBroadcast) continue;
    const int anchor =
        DiamondAnchor(graph, graph_out, *groups, *group_of, producer, readers, static_cast<int>(h));
    if (anchor < 0) continue;
    const Value& result = graph.value(graph.nodes()[(*groups)[anchor].nodes.back()].outputs[0]);
    const Value& out = graph.value(graph.nodes()[chain.nodes.back()].outputs[0]);
    if (!SameElementCount(out, result)) continue;  // no spreading
    MoveIntoAnchor(h, anchor, groups, group_of);
  }
}

// A group headed by a depthwise conv the strategy planned together with the 1x1 conv before it
// (KernelPlan::fused_with_producer) joins that conv's group, epilogue and all, after the
// diamonds (a hard-swish between them) have joined theirs: when that group is anchored on the
// conv alone and the depthwise conv is the one reader of anything it computes. Otherwise the
// depthwise conv runs apart, in the plain depthwise kernel, which reads the same weights.
void JoinExpansions(const Graph& graph, const std::vector<bool>& graph_out,
                    const std::vector<int>& producer,
                    const std::vector<std::vector<size_t>>& readers, std::vector<Building>* groups,
                    std::vector<int>* group_of) {
  for (size_t h = 0; h < groups->size(); ++h) {
    if ((*groups)[h].nodes.empty()) continue;
    const size_t dw_index = (*groups)[h].nodes.front();
    const Node& dw = graph.nodes()[dw_index];
    if (dw.op != "Conv" || !KernelPlan::Of(dw).fused_with_producer || !dw.HasInput(0)) continue;
    const int prod = producer[static_cast<size_t>(dw.inputs[0])];
    if (prod < 0) continue;
    const int g = (*group_of)[static_cast<size_t>(prod)];
    const Building& b = (*groups)[static_cast<size_t>(g)];
    if (static_cast<size_t>(g) == h || b.master != OpPattern::kOutEWiseFusable ||
        b.nodes.size() + (*groups)[h].nodes.size() > kMaxGroupNodes) {
      continue;
    }
    bool alone = graph.nodes()[b.nodes.front()].op == "Conv";
    for (size_t ni : b.nodes) {
      if (ni != b.nodes.front() && graph.nodes()[ni].op == "Conv") alone = false;
      for (int out : graph.nodes()[ni].outputs) {
        if (graph_out[static_cast<size_t>(out)]) alone = false;
        for (size_t r : readers[static_cast<size_t>(out)]) {
          const bool inside = (*group_of)[r] == g;
          if (!inside && !(r == dw_index && out == dw.inputs[0])) alone = false;
        }
      }
    }
    if (alone) MoveIntoAnchor(h, g, groups, group_of);
  }
}

std::string SanitizeOp(const std::string& op) {
  std::string s;
  for (char c : op) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<FusedGroup> FuseOps(Graph* graph, int opt_level) {
  // Graph outputs that are graph inputs or constants need a kernel that copies them.
  std::vector<bool> is_input(graph->values().size(), false);
  for (int in : graph->inputs()) is_input[static_cast<size_t>(in)] = true;
  for (int& out : graph->outputs()) {
    const Value& v = graph->value(out);
    if (!v.is_constant() && !is_input[static_cast<size_t>(out)]) continue;
    int copy = graph->AddValue(graph->UniqueName(v.name + "_copy"), v.type);
    graph->nodes().push_back(Node{"Identity", v.name + "_copy", {}, {out}, {copy}});
    out = copy;
  }

  const auto& nodes = graph->nodes();
  std::vector<int> uses = graph->UseCounts();
  std::vector<int> producer = graph->Producers();
  std::vector<Building> groups;
  std::vector<int> group_of(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    OpPattern p = PatternOf(n);
    // The groups n may join: each produces a value whose one reader is n.
    std::vector<int> candidates;
    if (opt_level > 0) {
      for (size_t k = 0; k < n.inputs.size(); ++k) {
        const int in = n.inputs[k];
        if (in == kAbsentValue || graph->value(in).is_constant()) continue;
        if (IndicesCheckedAtRunTime(n, k)) continue;
        int prod = producer[static_cast<size_t>(in)];
        if (prod < 0 || uses[static_cast<size_t>(in)] != 1) continue;
        if (nodes[static_cast<size_t>(prod)].outputs.size() != 1) continue;
        int g = group_of[static_cast<size_t>(prod)];
        if (BroadcastsAnchorResult(groups[static_cast<size_t>(g)], graph->value(in), *graph, n)) {
          continue;
        }
        if (CanFuse(groups[static_cast<size_t>(g)], p) &&
            std::find(candidates.begin(), candidates.end(), g) == candidates.end()) {
          candidates.push_back(g);
        }
      }
    }
    int target = candidates.empty() ? -1 : candidates.front();
    if (const int anchor = ChainsJoinAnchor(groups, candidates); anchor >= 0) {
      target = anchor;
      for (int c : candidates) {
        if (c != anchor) MoveIntoAnchor(static_cast<size_t>(c), anchor, &groups, &group_of);
      }
    } else {
      for (int c : ChainsMeetingInNode(groups, candidates, p)) {
        MoveIntoAnchor(static_cast<size_t>(c), target, &groups, &group_of);
      }
    }
    if (target < 0) {
      target = static_cast<int>(groups.size());
      groups.emplace_back();
      groups.back().master = p;
    } else {
      Building& b = groups[static_cast<size_t>(target)];
      if (p > b.master) b.master = p;
    }
    groups[static_cast<size_t>(target)].nodes.push_back(i);
    group_of[i] = target;
  }

  std::vector<bool> graph_out(graph->values().size(), false);
  for (int out : graph->outputs()) graph_out[static_cast<size_t>(out)] = true;
  const std::vector<std::vector<size_t>> readers = graph->Readers();
  if (opt_level > 0) {
    JoinDiamonds(*graph, graph_out, producer, readers, &groups, &group_of);
    JoinExpansions(*graph, graph_out, producer, readers, &groups, &group_of);
  }

  // Inputs: values read by a group but not produced in it; outputs: produced values read outside
  // (by another group) or graph outputs.
  std::vector<FusedGroup> result;
  std::map<std::string, int> name_count;
  // A group's external values all come from its last node (fusion only swallows single-use
  // values), so ordering groups by their last node is a topological order.
  std::vector<size_t> order(groups.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (groups[a].nodes.empty() || groups[b].nodes.empty())
      return groups[b].nodes.empty() < groups[a].nodes.empty();
    return groups[a].nodes.back() < groups[b].nodes.back();
  });
  for (size_t gi : order) {
    if (groups[gi].nodes.empty()) continue;  // merged into an anchored group
    FusedGroup fg;
    fg.graph = graph;
    std::string name = "fused";
    for (size_t ni : groups[gi].nodes) {
      const Node& n = nodes[ni];
      fg.nodes.push_back(&n);
      if (fg.anchor < 0 && PatternOf(n) == groups[gi].master &&
          groups[gi].master >= OpPattern::kCommReduce) {
        fg.anchor = static_cast<int>(fg.nodes.size() - 1);
      }
      if (name.size() < 48) name += "_" + SanitizeOp(n.op);
      const bool anchor = fg.anchor == static_cast<int>(fg.nodes.size()) - 1;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const int in = n.inputs[i];
        if (in == kAbsentValue || (!anchor && InlinedOperand(n, i, graph->value(in)))) continue;
        int prod = producer[static_cast<size_t>(in)];
        bool inside = prod >= 0 && group_of[static_cast<size_t>(prod)] == static_cast<int>(gi);
        if (!inside && std::find(fg.inputs.begin(), fg.inputs.end(), in) == fg.inputs.end()) {
          fg.inputs.push_back(in);
        }
      }
    }
    for (size_t ni : groups[gi].nodes) {
      for (int out : nodes[ni].outputs) {
        bool external = graph_out[static_cast<size_t>(out)];
        for (size_t r : readers[static_cast<size_t>(out)]) {
          external |= group_of[r] != static_cast<int>(gi);
        }
        if (external) fg.outputs.push_back(out);
      }
    }
    if (fg.outputs.empty()) continue;  // dead (DCE ran before; defensive)
    int k = name_count[name]++;
    fg.func_name = k == 0 ? name : name + "_" + std::to_string(k);
    result.push_back(std::move(fg));
  }
  // Names must be unique even when a base name collides with a suffixed one.
  std::map<std::string, int> seen;
  for (auto& fg : result) {
    while (seen.count(fg.func_name)) fg.func_name += "_";
    seen[fg.func_name] = 1;
  }
  return result;
}

}  // namespace compiler
}  // namespace ember
