// Matching of conv + epilogue groups, and the conv's view of the epilogue builder (see
// conv_group.h).
#include "conv_group.h"

#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/window_attrs.h>

#include <map>

#include "loop_builders.h"

namespace ember::compiler::schedule {
namespace {

bool IsF32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

// What a conv's epilogue may store: float32; float16, which computes in float32 and narrows on the
// store; int32, the integer product of a quantized conv run in float32 (exact) and cast.
bool EpilogueStores(DLDataType t) { return IsF32(t) || t == kFloat16 || t == kInt32; }

}  // namespace

const Node* SingleConvOf(const FusedGroup& group) {
  const Node* conv = nullptr;
  for (const Node* n : group.nodes) {
    if (n->op == "Conv") {
      if (conv != nullptr) return nullptr;
      conv = n;
      continue;
    }
    const OpDef* def = OpRegistry::Global()->Find(n->op);
    if (def == nullptr || !def->has_compute()) return nullptr;
    if (static_cast<int>(def->Pattern(*n)) > static_cast<int>(OpPattern::kBroadcast)) {
      return nullptr;
    }
  }
  return conv;
}

namespace {

bool ReadGeometry(const Node& conv, const Graph& g, ConvShape* s) {
  const int64_t in_block = LayoutBlock(conv.GetString(kDataLayoutAttr, "NCHW"));
  const int64_t out_block = LayoutBlock(conv.GetString(kOutLayoutAttr, "NCHW"));
  const TensorType& x = g.value(conv.inputs[0]).type;
  const TensorType& wt = g.value(conv.inputs[1]).type;
  const TensorType& o = g.value(conv.outputs[0]).type;
  const TensorType xt{NchwShapeOf(x.shape, in_block), x.dtype};
  const TensorType ot{NchwShapeOf(o.shape, out_block), o.dtype};
  if (xt.shape.size() != 4 || wt.shape.size() != 4 || ot.shape.size() != 4) return false;
  if (!IsF32(xt.dtype) || !IsF32(wt.dtype) || !IsF32(ot.dtype)) return false;
  // kernel_shape, not W's spatial dims: Winograd weights hold transformed kernels.
  WindowAttrs win;
  std::string why;
  if (!WindowAttrs::Read(conv, 2, {wt.shape[2], wt.shape[3]}, &win, &why)) return false;
  const std::vector<int64_t>&kernel = win.kernel, &strides = win.strides, &pads = win.pads;
  *s = ConvShape{xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], ot.shape[1], ot.shape[2],
                 ot.shape[3], kernel[0],   kernel[1],   strides[0],  strides[1],  pads[0],
                 pads[1],     win.group,   0,           0,           in_block,    out_block};
  s->d_h = kernel[0] > 1 ? win.dilations[0] : 1;
  s->d_w = kernel[1] > 1 ? win.dilations[1] : 1;
  if (s->d_h < 1 || s->d_w < 1) return false;
  if (s->group <= 0 || s->c % s->group != 0 || s->oc % s->group != 0) return false;
  s->icg = s->c / s->group;
  s->ocg = s->oc / s->group;
  if (wt.shape[0] != s->oc || wt.shape[1] != s->icg || ot.shape[0] != s->n) return false;
  if (s->s_h <= 0 || s->s_w <= 0 || s->s_h > 4 || s->s_w > 4 || s->pad_t < 0 || s->pad_l < 0) {
    return false;
  }
  return s->oh > 0 && s->ow > 0 && s->kh > 0 && s->kw > 0;
}

bool MatchAnyConvGroup(const FusedGroup& group, ConvGroup* m) {
  const Graph& g = *group.graph;
  const Node* conv = SingleConvOf(group);
  if (conv == nullptr || group.outputs.size() != 1 || conv->outputs.size() != 1) return false;
  if (!conv->HasInput(0) || !conv->HasInput(1)) return false;
  if (!IsGroupInput(group, conv->inputs[0]) || !IsGroupInput(group, conv->inputs[1])) return false;
  const bool has_bias = conv->HasInput(2);
  if (has_bias) {
    const TensorType& bt = g.value(conv->inputs[2]).type;
    if (!IsGroupInput(group, conv->inputs[2]) || !IsF32(bt.dtype) || bt.shape.size() != 1) {
      return false;
    }
  }
  ConvShape s;
  if (!ReadGeometry(*conv, g, &s)) return false;
  if (has_bias && g.value(conv->inputs[2]).type.shape[0] != s.oc) return false;
  const TensorType& gout = g.value(group.outputs[0]).type;
  if (gout.shape != g.value(conv->outputs[0]).type.shape || !EpilogueStores(gout.dtype)) {
    return false;
  }
  m->conv = conv;
  m->x_id = conv->inputs[0];
  m->w_id = conv->inputs[1];
  m->bias_id = has_bias ? conv->inputs[2] : -1;
  m->s = s;
  return true;
}

}  // namespace

bool MatchConvGroup(const FusedGroup& group, ConvGroup* m) {
  return MatchAnyConvGroup(group, m) && !m->conv->HasAttr(kWinogradTileAttr);
}

bool MatchWinogradConvGroup(const FusedGroup& group, ConvGroup* m) {
  return MatchAnyConvGroup(group, m) && m->conv->HasAttr(kWinogradTileAttr);
}

te::Expr OutputChannel(const ConvShape& s, const std::vector<te::Expr>& i) {
  return s.out_block == 0 ? i[1] : i[1] * s.out_block + i[4];
}

bool LowerConvEpilogue(const FusedGroup& group, const ConvGroup& m, int64_t result_elems,
                       const ConvResultIndex& index, const lower::ScheduleOptions& opts,
                       lower::LoweredFunc* f, lower::Buffer* result, lower::Buffer* x,
                       lower::Buffer* w) {
  const Node& conv = *m.conv;
  const std::vector<int64_t>& oshape = group.graph->value(conv.outputs[0]).type.shape;
  auto output = [&](const te::Tensor& raw, const std::map<int, te::Tensor>& inputs) {
    te::Tensor bias = m.bias_id >= 0 ? inputs.at(m.bias_id) : te::Tensor();
    return te::Compute(
        oshape,
        [&](const std::vector<te::Expr>& i) {
          te::Expr v = raw(index(i));
          if (bias.defined()) v = v + bias(OutputChannel(m.s, i));
          return v;
        },
        conv.name + "_out");
  };
  const lower::ArgInfo raw{
      conv.name + "_result", {result_elems}, DLDataType{kDLFloat, 32, 1}, nullptr};
  lower::LoweredFunc lf;
  lower::Buffer rb;
  if (!LowerEpilogue(group, conv, raw, output, opts, &lf, &rb)) return false;
  lower::Buffer xb = GroupInputBuffer(group, lf, m.x_id), wb = GroupInputBuffer(group, lf, m.w_id);
  if (!xb || !wb) return false;
  *f = std::move(lf);
  *result = rb;
  *x = xb;
  *w = wb;
  return true;
}

bool BuildConvEpilogueAt(const FusedGroup& group, const ConvGroup& m, lower::LoweredFunc* f,
                         lower::Buffer* x, lower::Buffer* w, EpilogueAt* at, BiasAt* bias) {
  const ConvShape& s = m.s;
  AnchorOperands ops{m.x_id, m.w_id, m.bias_id, [&s](const std::vector<te::Expr>& i) {
                       return std::vector<te::Expr>{OutputChannel(s, i)};
                     }};
  return BuildEpilogueAt(group, *m.conv, ops, f, x, w, at, bias);
}

lower::Stmt PadConvInput(const ConvShape& s, const lower::Buffer& x, const lower::Buffer& padded,
                         const te::Expr& n, int64_t ph, int64_t pw,
                         const lower::ScheduleOptions& opts) {
  const int64_t unit = std::max<int64_t>(1, s.in_block), planes = s.c / unit;
  // One task per padded row, not per plane: an image has 3 planes, and 3 tasks on 2 threads
  // leave one thread idle for a third of the copy.
  te::Expr row_index = te::MakeVar("cy");
  te::Expr c = te::FloorDiv(row_index, te::Expr(ph)), y = te::FloorMod(row_index, te::Expr(ph));
  te::Expr sy = y - s.pad_t;
  te::Expr dst_row = row_index * pw * unit;
  auto zeros = [&](const std::string& name, int64_t begin, int64_t end) {
    return Range(name, begin * unit, end * unit, lower::ForKind::kVectorized,
                 [&](const te::Expr& xx) { return lower::Store(padded, dst_row + xx, F32(0)); });
  };
  const int64_t copy_end = std::min(pw, s.pad_l + s.w);
  lower::Stmt inside =
      SeqOf({zeros("xl", 0, s.pad_l),
             Range("x", s.pad_l * unit, copy_end * unit, lower::ForKind::kVectorized,
                   [&](const te::Expr& xx) {
                     te::Expr src =
                         ((n * planes + c) * s.h + sy) * s.w * unit + (xx - s.pad_l * unit);
                     return lower::Store(padded, dst_row + xx, lower::BufferLoad(x, src));
                   }),
             zeros("xr", copy_end, pw)});
  lower::Stmt row = lower::If((sy >= 0) && (sy < s.h), inside, zeros("xz", 0, pw));
  bool par = opts.parallel && s.c * ph * pw >= opts.parallel_min_work;
  return lower::For(row_index, planes * ph,
                    par ? lower::ForKind::kParallel : lower::ForKind::kSerial, row);
}

}  // namespace ember::compiler::schedule
