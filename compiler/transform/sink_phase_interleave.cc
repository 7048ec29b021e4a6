// SinkPhaseInterleave: moves the elementwise ops that follow a ConvTranspose (its bias Add, a
// BatchNormalization's Mul and Add, the activation) from after its PhaseInterleave to before it,
// where they meet the Conv that computes every phase: a per-channel Add or Mul folds into that
// Conv's weights and bias, the others join its epilogue. A PhaseInterleave only permutes pixels
// and channel c of its output reads channels {phase, c} of its input, so a unary elementwise op,
// or a binary one whose other operand is a constant per channel (repeated for every phase),
// gives the same result on either side of it.
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/transform.h>

#include <map>
#include <memory>

#include "transform/fold_into_conv.h"

namespace ember {
namespace compiler {
namespace {

// The conv channels each output channel of PhaseInterleave `il` reads: conv channel k belongs to
// output channel ChannelOf(k).
struct PhaseChannels {
  int64_t conv_channels = 0;
  int64_t group = 1;
  int64_t phases = 1;
  int64_t cg = 1;  // output channels per group

  int64_t ChannelOf(int64_t k) const { return k / (phases * cg) * cg + k % cg; }
};

PhaseChannels ChannelsOf(const Graph& g, const Node& il) {
  PhaseChannels pc;
  pc.conv_channels = g.value(il.inputs[0]).type.shape[1];
  pc.group = il.GetInt("group");
  const auto s = il.GetInts("strides");
  pc.phases = s[0] * s[1];
  pc.cg = pc.conv_channels / pc.phases / pc.group;
  return pc;
}

// Channel extent of a constant that broadcasts to NCHW `out` along channels only (1 or C), or 0.
int64_t PerChannelExtent(const Value& c, const TensorType& out) {
  if (!c.is_constant() || c.type.ndim() > 4 || out.ndim() != 4) return 0;
  std::vector<int64_t> s(static_cast<size_t>(4 - c.type.ndim()), 1);
  s.insert(s.end(), c.type.shape.begin(), c.type.shape.end());
  if (s[0] != 1 || s[2] != 1 || s[3] != 1) return 0;
  return s[1] == 1 || s[1] == out.shape[1] ? s[1] : 0;
}

class Sinker {
 public:
  explicit Sinker(Graph* g) : g_(g), uses_(g->UseCounts()) {}

  void Run() {
    std::vector<Node> nodes = std::move(g_->nodes());
    g_->nodes().clear();
    for (Node& n : nodes) {
      const size_t data = InterleavedInput(n);
      if (data == kNone) {
        Keep(std::move(n));
      } else {
        Sink(std::move(n), data);
      }
    }
    EliminateDeadCode(g_);
  }

 private:
  static constexpr size_t kNone = ~size_t{0};

  // The input of n that a PhaseInterleave wrote for n alone, when n may move before it.
  size_t InterleavedInput(const Node& n) const {
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    if (def == nullptr || n.outputs.size() != 1) return kNone;
    const OpPattern p = def->Pattern(n);
    const bool unary = p == OpPattern::kElemWise && n.inputs.size() == 1 && n.HasInput(0);
    const bool binary = p == OpPattern::kBroadcast && n.inputs.size() == 2;
    if (!unary && !binary) return kNone;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (interleave_.count(n.inputs[i]) == 0 || uses_[n.inputs[i]] != 1) continue;
      const TensorType& in = g_->value(n.inputs[i]).type;
      if (g_->value(n.outputs[0]).type.shape != in.shape) return kNone;
      if (unary || PerChannelExtent(g_->value(n.inputs[1 - i]), in) != 0) return i;
    }
    return kNone;
  }

  void Keep(Node n) {
    const size_t at = g_->nodes().size();
    for (int out : n.outputs) producer_[out] = at;
    if (n.op == "PhaseInterleave") interleave_[n.outputs[0]] = at;
    g_->nodes().push_back(std::move(n));
  }

  // n reads the interleave at `il_at`; n moves into its place, reading the conv channels, and the
  // interleave follows, writing n's output. An Add or Mul folds into the conv when it can.
  void Sink(Node n, size_t data) {
    const size_t il_at = interleave_.at(n.inputs[data]);
    Node il = std::move(g_->nodes()[il_at]);
    const PhaseChannels pc = ChannelsOf(*g_, il);
    const int y = il.inputs[0];
    if (n.inputs.size() == 2) n.inputs[1 - data] = PhaseConstant(n.inputs[1 - data], pc);
    n.inputs[data] = y;
    il.outputs = n.outputs;
    if (FoldIntoConv(n, data, y)) {
      interleave_[n.outputs[0]] = il_at;
      g_->nodes()[il_at] = std::move(il);
      return;
    }
    const Value& out = g_->value(n.outputs[0]);
    const int moved = g_->AddValue(g_->UniqueName(out.name + "_phases"),
                                   TensorType{g_->value(y).type.shape, out.type.dtype});
    uses_.resize(g_->values().size(), 0);
    uses_[moved] = 1;
    n.outputs = {moved};
    il.inputs = {moved};
    producer_[moved] = il_at;
    g_->nodes()[il_at] = std::move(n);
    Keep(std::move(il));
  }

  // A per-channel constant for the conv's channels: each phase repeats the channel's value.
  int PhaseConstant(int id, const PhaseChannels& pc) {
    const Value& c = g_->value(id);
    if (c.type.NumElements() == 1) return id;
    std::vector<int64_t> shape = c.type.shape;
    shape[shape.size() - 3] = pc.conv_channels;
    auto t = std::make_shared<HostTensor>(TensorType{shape, c.type.dtype});
    for (int64_t k = 0; k < pc.conv_channels; ++k) {
      t->SetFromDouble(k, c.constant->GetAsDouble(pc.ChannelOf(k)));
    }
    return g_->AddConstant(g_->UniqueName(c.name + "_phases"), t);
  }

  // Add/Mul by a constant (now per conv channel) into the Conv writing y, when y is its alone.
  bool FoldIntoConv(const Node& n, size_t data, int y) {
    if (n.op != "Add" && n.op != "Mul") return false;
    auto it = producer_.find(y);
    if (it == producer_.end() || uses_[y] != 1) return false;
    Node& conv = g_->nodes()[it->second];
    if (conv.op != "Conv" || g_->value(y).type.dtype != kFloat32) return false;
    const Value& c = g_->value(n.inputs[1 - data]);
    const int64_t channels = g_->value(y).type.shape[1];
    std::vector<double> scale(static_cast<size_t>(channels), 1.0);
    std::vector<double> shift(static_cast<size_t>(channels), 0.0);
    for (int64_t k = 0; k < channels; ++k) {
      const double v = c.constant->GetAsDouble(c.type.NumElements() == 1 ? 0 : k);
      (n.op == "Mul" ? scale : shift)[static_cast<size_t>(k)] = v;
    }
    return FoldChannelAffineIntoConv(g_, &conv, scale, shift, "_fold");
  }

  Graph* g_;
  std::vector<int> uses_;
  std::map<int, size_t> producer_;    // value -> index of the kept node writing it
  std::map<int, size_t> interleave_;  // value -> index of the PhaseInterleave writing it
};

}  // namespace

void SinkPhaseInterleave(Graph* graph) { Sinker(graph).Run(); }

}  // namespace compiler
}  // namespace ember
