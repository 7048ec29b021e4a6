// AlterConvLayout: conv chains in NCHW[x]c (see ember/compiler/ir/layout.h), with layout
// transforms only where the chain meets an op that reads NCHW.
//
// Walking the nodes in order, a conv whose kernel works blocked (KernelStrategy::ConvLayoutBlock),
// and an elementwise node (its other operands scalars, per-channel vectors or of its shape), a
// MaxPool, global pool, Resize, channel Concat or PhaseInterleave reading a blocked value, are
// rewritten to produce a new, blocked value; the original value is then produced from it by a
// LayoutTransform, so readers that need NCHW (and graph outputs, whose names users see) keep
// reading it. Blocked readers take the blocked value directly, and an NCHW value a blocked node
// reads is transformed once. Transforms nobody reads are dropped at the end. Integer convs
// (quantized models) chain their 8-bit data the same way where their int8 kernels work blocked
// (RewriteIntegerConv).
#include <ember/compiler/ir/kernel_plan.h>
#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/window_attrs.h>
#include <ember/compiler/transform.h>

#include <map>
#include <memory>
#include <utility>

namespace ember {
namespace compiler {
namespace {

// One value (constant or not) broadcasts over any layout.
bool IsScalar(const Value& v) { return v.type.NumElements() == 1; }

class LayoutRewriter {
 public:
  LayoutRewriter(Graph* g, const KernelStrategy& strategy) : g_(g), strategy_(strategy) {}

  void Run() {
    std::vector<Node> nodes = std::move(g_->nodes());
    g_->nodes().clear();
    for (Node& n : nodes) {
      if (n.op == "Conv" && n.HasAttr(kDataZeroPointAttr)) {
        RewriteIntegerConv(std::move(n));
        continue;
      }
      const int64_t block = BlockOf(n);
      if (block == 0) {
        g_->nodes().push_back(std::move(n));
      } else if (n.op == "Conv") {
        RewriteConv(std::move(n), block);
      } else if (n.op == "MaxPool" || n.op == "PhaseInterleave" || IsGlobalPool(n)) {
        RewriteDataLayout(std::move(n), block);
      } else if (n.op == "Resize") {
        RewriteResize(std::move(n), block);
      } else {
        RewriteElementwise(std::move(n), block);  // Concat's inputs too
      }
    }
    EliminateDeadCode(g_);
  }

 private:
  // Values a blocked chain carries: float, int32 (the integer products of quantized convs, and
  // the float kernels' sums cast to int32 and back between such a conv and its epilogue) and the
  // 8-bit data of quantized models between int8 kernels.
  static bool BlockableType(DLDataType t) {
    return t.code == kDLFloat || t == kInt32 || t == kUInt8 || t == kInt8;
  }

  // A constant of one value per channel of the 4-D `out` ([C], [C,1,1], [1,C,1,1]).
  bool IsPerChannelConstant(const Value& v, const TensorType& out) const {
    const std::vector<int64_t>& s = v.type.shape;
    if (!v.is_constant() || s.size() > 4 || s.size() < 3 || v.type.NumElements() != out.shape[1]) {
      return false;
    }
    return s[s.size() - 3] == out.shape[1];
  }

  // A computed [1,C,1,1] operand of a node writing the 4-D `out` (a squeeze-excite scale):
  // blocked, it is [1,C/x,1,1,x] and broadcasts over NCHW[x]c as it does over NCHW.
  bool IsComputedPerChannel(const Value& v, const TensorType& out) const {
    return !v.is_constant() && v.type.shape == std::vector<int64_t>{1, out.shape[1], 1, 1} &&
           v.type.shape != out.shape && BlockableType(v.type.dtype);
  }

  // The block n runs in, or 0 (NCHW).
  int64_t BlockOf(const Node& n) const {
    if (n.op == "Conv") return strategy_.ConvLayoutBlock(*g_, n);
    if (n.op == "MaxPool") return MaxPoolBlock(n);
    if (IsGlobalPool(n)) return GlobalPoolBlock(n);
    if (n.op == "Resize") return ResizeBlock(n);
    if (n.op == "Concat") return ConcatBlock(n);
    if (n.op == "PhaseInterleave") return InterleaveBlock(n);
    return ElementwiseBlock(n);
  }

  // A Resize of H and W alone (canonical: one input, scales for every axis) runs in the block
  // its input was written in: the blocked axes are resized as they are in NCHW.
  int64_t ResizeBlock(const Node& n) const {
    const TensorType& in = g_->value(n.inputs[0]).type;
    const TensorType& out = g_->value(n.outputs[0]).type;
    const auto scales = n.GetFloats("scales", {});
    if (n.inputs.size() != 1 || in.ndim() != 4 || out.ndim() != 4 || scales.size() != 4 ||
        scales[0] != 1.0 || scales[1] != 1.0 || in.shape[0] != out.shape[0] ||
        in.shape[1] != out.shape[1]) {
      return 0;
    }
    return NativeBlock(n.inputs[0]);
  }

  // A node whose data_layout attribute says how it reads (and writes) its first input.
  void RewriteDataLayout(Node n, int64_t block) {
    n.inputs[0] = BlockedValue(n.inputs[0], block);
    n.attrs[kDataLayoutAttr] = LayoutName(block);
    EmitBlocked(std::move(n), block);
  }

  void RewriteResize(Node n, int64_t block) {
    n.inputs[0] = BlockedValue(n.inputs[0], block);
    auto scales = n.GetFloats("scales");
    scales.push_back(1.0);
    n.attrs["scales"] = scales;
    n.attrs["__out_shape"] = BlockedShape(g_->value(n.outputs[0]).type.shape, block);
    EmitBlocked(std::move(n), block);
  }

  // A ConvTranspose's PhaseInterleave runs in the block its conv wrote, when each phase's
  // channels of a group fill whole blocks: lanes then move together.
  int64_t InterleaveBlock(const Node& n) const {
    const int64_t block = NativeBlock(n.inputs[0]);
    const int64_t channels = g_->value(n.outputs[0]).type.shape[1];
    return block != 0 && (channels / n.GetInt("group")) % block == 0 ? block : 0;
  }

  // A channel Concat runs in the block of its first input a blocked node wrote, when every
  // input's channels fill whole blocks.
  int64_t ConcatBlock(const Node& n) const {
    const TensorType& out = g_->value(n.outputs[0]).type;
    if (n.GetInt("axis") != 1 || out.ndim() != 4 || !BlockableType(out.dtype)) return 0;
    int64_t block = 0;
    for (int in : n.inputs) {
      if (block == 0) block = NativeBlock(in);
    }
    for (int in : n.inputs) {
      if (block == 0 || g_->value(in).type.shape[1] % block != 0) return 0;
    }
    return block;
  }

  // The block an elementwise node can run in: that of its first input a blocked node wrote, when
  // every other input is a scalar, a per-channel vector or a tensor of the output's shape; else
  // 0.
  int64_t ElementwiseBlock(const Node& n) const {
    const OpDef* def = OpRegistry::Global()->Find(n.op);
    if (def == nullptr || def->Pattern(n) > OpPattern::kBroadcast || n.outputs.size() != 1) {
      return 0;
    }
    const TensorType& out = g_->value(n.outputs[0]).type;
    if (out.ndim() != 4 || !BlockableType(out.dtype)) return 0;
    int64_t block = 0;
    for (int in : n.inputs) {
      if (in == kAbsentValue || IsScalar(g_->value(in))) continue;
      if (IsPerChannelConstant(g_->value(in), out)) continue;
      if (IsComputedPerChannel(g_->value(in), out)) continue;
      const TensorType& t = g_->value(in).type;
      if (t.shape != out.shape || !BlockableType(t.dtype)) return 0;
      if (block == 0) block = NativeBlock(in);
    }
    return block;
  }

  // A 2-D MaxPool without Indices runs in the block its input was written in (0: NCHW).
  int64_t MaxPoolBlock(const Node& n) const {
    if (n.outputs.size() != 1 || g_->value(n.inputs[0]).type.ndim() != 4) return 0;
    WindowAttrs win;
    std::string why;
    if (!WindowAttrs::Read(n, 2, {}, &win, &why) || !win.Undilated()) return 0;
    return NativeBlock(n.inputs[0]);
  }

  static bool IsGlobalPool(const Node& n) {
    return n.op == "GlobalAveragePool" || n.op == "GlobalMaxPool";
  }

  // A global pool of a 4-D value runs in the block its input was written in: its blocked output
  // [N, C/x, 1, 1, x] is NCHW's bytes, so the transform after it copies C values, not a plane.
  int64_t GlobalPoolBlock(const Node& n) const {
    if (n.outputs.size() != 1 || g_->value(n.inputs[0]).type.ndim() != 4) return 0;
    return NativeBlock(n.inputs[0]);
  }

  // A conv reads its input in the block its producer wrote, else in its own output's block when
  // the channels fill it, else in NCHW; a depthwise conv (the only grouped conv blocked) reads
  // its output's block.
  void RewriteConv(Node n, int64_t block) {
    const int64_t channels = g_->value(n.inputs[0]).type.shape[1];
    int64_t in_block = WindowAttrs::Of(n, 2).group > 1 ? block : NativeBlock(n.inputs[0]);
    if (in_block == 0 && channels % block == 0) in_block = block;
    if (in_block != 0) n.inputs[0] = BlockedValue(n.inputs[0], in_block);
    n.attrs[kDataLayoutAttr] = LayoutName(in_block);
    n.attrs[kOutLayoutAttr] = LayoutName(block);
    EmitBlocked(std::move(n), block);
  }

  // An integer conv reads its data as its producer wrote it where its kernel can (the dense
  // int8 kernels copy it into their own byte layout from either), and writes the block its
  // kernel works in, if any (KernelStrategy::ConvLayoutBlock); a depthwise one runs blocked only
  // on data written so, never behind a transform of its input.
  void RewriteIntegerConv(Node n) {
    const int64_t in = NativeBlock(n.inputs[0]);
    int64_t out = strategy_.ConvLayoutBlock(*g_, n);
    const bool reads = in != 0 && strategy_.IntegerConvReadsBlock(*g_, n, in);
    if (WindowAttrs::Of(n, 2).group > 1 && !reads) out = 0;
    if (reads) {
      n.inputs[0] = BlockedValue(n.inputs[0], in);
      n.attrs[kDataLayoutAttr] = LayoutName(in);
    }
    if (out == 0) {
      g_->nodes().push_back(std::move(n));
      return;
    }
    n.attrs[kOutLayoutAttr] = LayoutName(out);
    EmitBlocked(std::move(n), out);
  }

  void RewriteElementwise(Node n, int64_t block) {
    const TensorType out = g_->value(n.outputs[0]).type;
    for (int& in : n.inputs) {
      if (in == kAbsentValue || IsScalar(g_->value(in))) continue;
      in = IsPerChannelConstant(g_->value(in), out) ? BlockedPerChannel(in, block)
                                                    : BlockedValue(in, block);
    }
    EmitBlocked(std::move(n), block);
  }

  // A per-channel constant as [1][C/block][1][1][block], broadcasting over NCHW[block]c: channel
  // c = cb * block + ci is element c in either shape, so the data stays as it is.
  int BlockedPerChannel(int constant, int64_t block) {
    auto it = blocked_.find({constant, block});
    if (it != blocked_.end()) return it->second;
    const Value& v = g_->value(constant);
    auto c = std::make_shared<HostTensor>(*v.constant);
    c->type.shape = {1, v.type.NumElements() / block, 1, 1, block};
    const int blocked = g_->AddConstant(g_->UniqueName(v.name + "_" + LayoutName(block)), c);
    blocked_[{constant, block}] = blocked;
    return blocked;
  }

  // Emits n writing a new blocked value, then the transform that rebuilds the NCHW original.
  void EmitBlocked(Node n, int64_t block) {
    const int nchw = n.outputs[0];
    const int blocked = NewBlockedValue(nchw, block);
    n.outputs[0] = blocked;
    const std::string name = n.name;
    g_->nodes().push_back(std::move(n));
    Transform(name + "_to_nchw", blocked, nchw, block, 0);
    native_block_[nchw] = block;
  }

  // The block a blocked node wrote `nchw` in, or 0.
  int64_t NativeBlock(int nchw) const {
    auto it = native_block_.find(nchw);
    return it == native_block_.end() ? 0 : it->second;
  }

  // `nchw` in NCHW[block]c: the value already made, else a new transform's output.
  int BlockedValue(int nchw, int64_t block) {
    auto it = blocked_.find({nchw, block});
    if (it != blocked_.end()) return it->second;
    const int blocked = NewBlockedValue(nchw, block);
    Transform(g_->value(nchw).name + "_to_" + LayoutName(block), nchw, blocked, 0, block);
    return blocked;
  }

  int NewBlockedValue(int nchw, int64_t block) {
    const Value& v = g_->value(nchw);
    const int blocked = g_->AddValue(g_->UniqueName(v.name + "_" + LayoutName(block)),
                                     TensorType{BlockedShape(v.type.shape, block), v.type.dtype});
    blocked_[{nchw, block}] = blocked;
    return blocked;
  }

  void Transform(const std::string& name, int src, int dst, int64_t src_block, int64_t dst_block) {
    Node t{"LayoutTransform", name, {}, {src}, {dst}};
    t.attrs[kSrcLayoutAttr] = LayoutName(src_block);
    t.attrs[kDstLayoutAttr] = LayoutName(dst_block);
    g_->nodes().push_back(std::move(t));
  }

  Graph* g_;
  const KernelStrategy& strategy_;
  std::map<std::pair<int, int64_t>, int> blocked_;  // (NCHW value, block) -> blocked value
  std::map<int, int64_t> native_block_;  // NCHW value -> block its (blocked) producer wrote
};

}  // namespace

void AlterConvLayout(Graph* graph, const KernelStrategy& strategy) {
  LayoutRewriter(graph, strategy).Run();
}

}  // namespace compiler
}  // namespace ember
