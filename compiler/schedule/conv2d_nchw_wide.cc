// Register-blocked direct 2-D convolution on a "wide" output pitch.
//
// Stage 1 copies one image of the input into a workspace that is zero-padded and split by stride
// phase: plane (c, py, px) holds padded rows py, py+S, ... and columns px, px+S, ... With that, the
// input of output (oh, ow) for tap (kh, kw) sits at plane (c, kh%S, kw%S), row oh + kh/S, column
// ow + kw/S, so along the flat index q = oh*PW + ow every tap reads consecutive floats. Stage 2
// accumulates `lanes` consecutive q times `oc_block` output channels in scalar locals (promoted to
// SSA and packed into vectors by LLVM's SLP vectoriser), and writes the block to a wide workspace
// [N, OC, QP]. The epilogue (bias and the group's elementwise/broadcast nodes) is lowered by the
// default schedule from a te compute that reads the valid columns of the wide workspace.
#include <ember/compiler/ir/op_registry.h>

#include <map>

#include "../ops/op_common.h"
#include "schedule.h"

namespace ember::compiler::schedule {
namespace {

using lower::Buffer;
using lower::BufferLoad;
using lower::BufferNode;
using lower::BufferScope;
using lower::ForKind;
using lower::Stmt;
using te::Expr;
using te::Tensor;

Buffer NewBuffer(const std::string& name, int64_t size, BufferScope scope) {
  auto b = std::make_shared<BufferNode>();
  b->name = name;
  b->dtype = te::Float(32);
  b->size = size;
  b->scope = scope;
  return b;
}

bool IsF32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

struct ConvShape {
  int64_t n, c, h, w;       // input
  int64_t oc, oh, ow;       // output
  int64_t kh, kw;           // kernel
  int64_t s_h, s_w;         // strides
  int64_t pad_t, pad_l;     // leading pads
  int64_t group, icg, ocg;  // channels per group
};

}  // namespace

bool TryConv2dWide(const FusedGroup& group, const lower::ScheduleOptions& opts,
                   const Conv2dParams& p, lower::LoweredFunc* out) {
  const Graph& g = *group.graph;
  // ---- does the group fit? one Conv, then elementwise/broadcast nodes, one output ----
  const Node* conv = nullptr;
  for (const Node* n : group.nodes) {
    if (n->op == "Conv") {
      if (conv != nullptr) return false;
      conv = n;
      continue;
    }
    const OpDef* def = OpRegistry::Global()->Find(n->op);
    if (def == nullptr || !def->has_compute()) return false;
    if (static_cast<int>(def->Pattern(*n)) > static_cast<int>(OpPattern::kBroadcast)) return false;
  }
  if (conv == nullptr || group.outputs.size() != 1 || conv->outputs.size() != 1) return false;
  if (!conv->HasInput(0) || !conv->HasInput(1)) return false;
  auto is_group_input = [&](int vid) {
    for (int v : group.inputs) {
      if (v == vid) return true;
    }
    return false;
  };
  const Value& xv = g.value(conv->inputs[0]);
  const Value& wv = g.value(conv->inputs[1]);
  const Value& ov = g.value(conv->outputs[0]);
  if (!is_group_input(xv.id) || !is_group_input(wv.id)) return false;
  bool has_bias = conv->HasInput(2);
  if (has_bias && !is_group_input(conv->inputs[2])) return false;
  if (xv.type.shape.size() != 4 || wv.type.shape.size() != 4 || ov.type.shape.size() != 4) {
    return false;
  }
  if (!IsF32(xv.type.dtype) || !IsF32(wv.type.dtype) || !IsF32(ov.type.dtype)) return false;
  if (has_bias && !IsF32(g.value(conv->inputs[2]).type.dtype)) return false;
  const Value& gout = g.value(group.outputs[0]);
  if (gout.type.shape != ov.type.shape || !IsF32(gout.type.dtype)) return false;
  std::vector<int64_t> dil = conv->GetInts("dilations", {1, 1});
  std::vector<int64_t> strides = conv->GetInts("strides", {1, 1});
  std::vector<int64_t> pads = conv->GetInts("pads", {0, 0, 0, 0});
  if (dil.size() != 2 || dil[0] != 1 || dil[1] != 1 || strides.size() != 2 || pads.size() != 4) {
    return false;
  }
  ConvShape s;
  s.n = xv.type.shape[0];
  s.c = xv.type.shape[1];
  s.h = xv.type.shape[2];
  s.w = xv.type.shape[3];
  s.oc = ov.type.shape[1];
  s.oh = ov.type.shape[2];
  s.ow = ov.type.shape[3];
  s.kh = wv.type.shape[2];
  s.kw = wv.type.shape[3];
  s.s_h = strides[0];
  s.s_w = strides[1];
  s.pad_t = pads[0];
  s.pad_l = pads[1];
  s.group = conv->GetInt("group", 1);
  if (s.group <= 0 || s.c % s.group != 0 || s.oc % s.group != 0) return false;
  s.icg = s.c / s.group;
  s.ocg = s.oc / s.group;
  if (wv.type.shape[0] != s.oc || wv.type.shape[1] != s.icg || ov.type.shape[0] != s.n) {
    return false;
  }
  if (s.s_h <= 0 || s.s_w <= 0 || s.s_h > 4 || s.s_w > 4 || s.pad_t < 0 || s.pad_l < 0) {
    return false;
  }
  if (s.oh <= 0 || s.ow <= 0 || s.kh <= 0 || s.kw <= 0) return false;

  const int64_t lanes = p.lanes;
  int64_t ocb = 1;
  for (int64_t cand : {p.oc_block, int64_t{4}, int64_t{2}, int64_t{1}}) {
    if (cand >= 1 && cand <= p.oc_block && s.ocg % cand == 0) {
      ocb = cand;
      break;
    }
  }
  // Phase planes: PH rows x PW columns each; the wide output pitch is PW.
  const int64_t ph = s.oh + (s.kh - 1) / s.s_h;
  const int64_t pw = s.ow + (s.kw - 1) / s.s_w;
  const int64_t phases = s.s_h * s.s_w;
  const int64_t plane = ph * pw;
  const int64_t q_valid = s.oh * pw;
  const int64_t q_tiles = (q_valid + lanes - 1) / lanes;
  const int64_t qp = q_tiles * lanes;
  const int64_t pad_elems = s.c * phases * plane;
  const int64_t slack = lanes + s.kw + pw;
  // Too much garbage work (tiny outputs with wide pitch) or huge workspaces: default schedule.
  if (qp > 4 * s.oh * s.ow + lanes || pad_elems > (int64_t{1} << 28)) return false;

  // ---- te: the group with the conv replaced by a read of the wide workspace ----
  ops::GraphScope scope(&g);
  std::map<int, Tensor> env;
  std::vector<Tensor> inputs;
  std::vector<lower::ArgInfo> args;
  for (int vid : group.inputs) {
    const Value& v = g.value(vid);
    Tensor t = te::Placeholder(v.type.shape, ops::ExprType(v.type.dtype), v.name);
    env[vid] = t;
    inputs.push_back(t);
    args.push_back(lower::ArgInfo{v.name, v.type.shape, v.type.dtype, nullptr});
  }
  const size_t num_inputs = inputs.size();
  Tensor wide = te::Placeholder({s.n, s.oc, qp}, te::Float(32), conv->name + "_wide");
  inputs.push_back(wide);
  args.push_back(
      lower::ArgInfo{conv->name + "_wide", {s.n, s.oc, qp}, DLDataType{kDLFloat, 32, 1}, nullptr});
  Tensor bias = has_bias ? env.at(conv->inputs[2]) : Tensor();
  if (has_bias && (bias.ndim() != 1 || bias.shape()[0] != s.oc)) return false;
  const int64_t pitch = pw;
  env[conv->outputs[0]] = te::Compute(
      ov.type.shape,
      [&](const std::vector<Expr>& i) {
        Expr v = wide(i[0], i[1], i[2] * pitch + i[3]);
        if (has_bias) v = v + bias(i[1]);
        return v;
      },
      conv->name + "_out");
  for (const Node* node : group.nodes) {
    if (node == conv) continue;
    const OpDef* def = OpRegistry::Global()->Find(node->op);
    std::vector<Tensor> ins;
    for (int vid : node->inputs) {
      if (vid == kAbsentValue) {
        ins.push_back(Tensor());
        continue;
      }
      auto it = env.find(vid);
      if (it != env.end()) {
        ins.push_back(it->second);
      } else if (g.value(vid).is_constant() && g.value(vid).constant->NumElements() <= 256) {
        ins.push_back(ops::ConstTensor(*g.value(vid).constant, g.value(vid).name));
      } else if (g.value(vid).is_constant()) {
        ins.push_back(Tensor());
      } else {
        return false;
      }
    }
    std::vector<TensorType> out_types;
    for (int o : node->outputs) out_types.push_back(g.value(o).type);
    std::vector<Tensor> res = def->compute()(*node, ins, out_types);
    if (res.size() < node->outputs.size()) return false;
    for (size_t k = 0; k < node->outputs.size(); ++k) {
      if (res[k].shape() != out_types[k].shape ||
          res[k].dtype() != ops::ExprType(out_types[k].dtype)) {
        return false;
      }
      env[node->outputs[k]] = res[k];
    }
  }
  auto oit = env.find(group.outputs[0]);
  if (oit == env.end()) return false;
  args.push_back(lower::ArgInfo{gout.name, gout.type.shape, gout.type.dtype, nullptr});
  lower::LoweredFunc f = lower::LowerTensors(group.func_name, inputs, {oit->second}, args, opts);

  // The wide tensor is a workspace, not an argument.
  Buffer wide_buf = f.args[num_inputs].buffer;
  {
    auto* wb = const_cast<BufferNode*>(wide_buf.get());
    wb->scope = BufferScope::kWorkspace;
    wb->arg_index = -1;
    wb->name += "_ws";
    f.args.erase(f.args.begin() + static_cast<std::ptrdiff_t>(num_inputs));
    for (size_t i = num_inputs; i < f.args.size(); ++i) {
      const_cast<BufferNode*>(f.args[i].buffer.get())->arg_index = static_cast<int>(i);
    }
  }
  Buffer xb, wb;
  for (size_t i = 0; i < num_inputs; ++i) {
    if (group.inputs[i] == xv.id && !xb) xb = f.args[i].buffer;
    if (group.inputs[i] == wv.id && !wb) wb = f.args[i].buffer;
  }
  if (!xb || !wb) return false;
  Buffer padded = NewBuffer(conv->name + "_padded_ws", pad_elems + slack, BufferScope::kWorkspace);

  // ---- stage 1: zero-padded, phase-split copy of image n ----
  Expr n = te::MakeVar("n");
  Expr c = te::MakeVar("c"), py = te::MakeVar("py"), px = te::MakeVar("px");
  Expr y = te::MakeVar("y"), x = te::MakeVar("x");
  Expr src_y = y * s.s_h + py - s.pad_t;
  Expr src_x = x * s.s_w + px - s.pad_l;
  Expr inside = (src_y >= 0) && (src_y < s.h) && (src_x >= 0) && (src_x < s.w);
  Expr src = ((n * s.c + c) * s.h + src_y) * s.w + src_x;
  Expr dst = (((c * s.s_h + py) * s.s_w + px) * ph + y) * pw + x;
  Stmt copy = lower::Store(padded, dst,
                           te::Select(inside, BufferLoad(xb, src), te::Const(te::Float(32), 0)));
  copy = lower::For(x, pw, ForKind::kVectorized, copy);
  copy = lower::For(y, ph, ForKind::kSerial, copy);
  copy = lower::For(px, s.s_w, ForKind::kSerial, copy);
  copy = lower::For(py, s.s_h, ForKind::kSerial, copy);
  bool par_copy = opts.parallel && pad_elems >= opts.parallel_min_work && s.c > 1;
  copy = lower::For(c, s.c, par_copy ? ForKind::kParallel : ForKind::kSerial, copy);
  Expr z = te::MakeVar("z");
  Stmt zero_slack = lower::For(z, slack, ForKind::kVectorized,
                               lower::Store(padded, pad_elems + z, te::Const(te::Float(32), 0)));

  // ---- stage 2: register-blocked accumulation over (ic, kh, kw) ----
  // Reduction loops over (ic, kh, kw): LLVM must not vectorise or unroll them (it would turn the
  // accumulators into reductions along them); the SLP vectoriser packs the lanes instead.
  Expr t = te::MakeVar("t"), ic_v = te::MakeVar("ic"), kh_v = te::MakeVar("kh"),
       kw_v = te::MakeVar("kw");
  const int64_t taps = s.kh * s.kw;
  const int64_t red_extent = s.icg * taps;
  Expr ic = s.icg > 1 ? ic_v : Expr(0);
  Expr kh_e = s.kh > 1 ? kh_v : Expr(0);
  Expr kw_e = s.kw > 1 ? kw_v : Expr(0);
  Expr r = (ic * s.kh + kh_e) * s.kw + kw_e;
  const int64_t oc_blocks = s.oc / ocb;
  Expr ob = te::FloorDiv(t, Expr(q_tiles));
  Expr qt = te::FloorMod(t, Expr(q_tiles));
  Expr oc0 = ob * ocb;
  Expr grp = s.group > 1 ? te::FloorDiv(oc0, Expr(s.ocg)) : Expr(0);
  Expr ic_e = s.group > 1 ? grp * s.icg + ic : ic;
  Expr phase_y = s.s_h > 1 ? te::FloorMod(kh_e, Expr(s.s_h)) : Expr(0);
  Expr phase_x = s.s_w > 1 ? te::FloorMod(kw_e, Expr(s.s_w)) : Expr(0);
  Expr row_off = s.s_h > 1 ? te::FloorDiv(kh_e, Expr(s.s_h)) : kh_e;
  Expr col_off = s.s_w > 1 ? te::FloorDiv(kw_e, Expr(s.s_w)) : kw_e;
  Expr base =
      ((ic_e * s.s_h + phase_y) * s.s_w + phase_x) * plane + row_off * pw + col_off + qt * lanes;
  std::vector<std::vector<Buffer>> acc(ocb, std::vector<Buffer>(lanes));
  std::vector<Stmt> init, update, store;
  for (int64_t j = 0; j < ocb; ++j) {
    Expr widx = (oc0 + j) * red_extent + r;
    Expr wval = BufferLoad(wb, widx);
    for (int64_t v = 0; v < lanes; ++v) {
      auto a = std::make_shared<BufferNode>();
      a->name = "acc" + std::to_string(j) + "_" + std::to_string(v);
      a->dtype = te::Float(32);
      a->size = 1;
      a->scope = BufferScope::kLocal;
      f.locals.push_back(a);
      acc[j][v] = a;
      init.push_back(lower::Store(a, 0, te::Const(te::Float(32), 0)));
      update.push_back(lower::Store(a, 0, BufferLoad(a, 0) + BufferLoad(padded, base + v) * wval));
      store.push_back(
          lower::Store(wide_buf, (n * s.oc + oc0 + j) * qp + qt * lanes + v, BufferLoad(a, 0)));
    }
  }
  Stmt red = lower::Seq(update);
  auto scalar_loop = [](const Expr& var, int64_t extent, Stmt body) -> Stmt {
    if (extent == 1) return body;  // its variable was replaced by 0 above
    auto loop = std::make_shared<lower::ForNode>();
    loop->var = var;
    loop->extent = extent;
    loop->keep_scalar = true;
    loop->body = std::move(body);
    return loop;
  };
  red = scalar_loop(kw_v, s.kw, red);
  red = scalar_loop(kh_v, s.kh, red);
  red = scalar_loop(ic_v, s.icg, red);
  std::vector<Stmt> tile = init;
  tile.push_back(red);
  tile.insert(tile.end(), store.begin(), store.end());
  int64_t work = oc_blocks * q_tiles * ocb * lanes * red_extent;
  bool par = opts.parallel && work >= opts.parallel_min_work && oc_blocks * q_tiles > 1;
  Stmt compute = lower::For(t, oc_blocks * q_tiles, par ? ForKind::kParallel : ForKind::kSerial,
                            lower::Seq(tile));

  // A unit loop over n binds n = 0 for single images (LLVM folds it away).
  Stmt conv_stmt = lower::For(n, s.n, ForKind::kSerial, lower::Seq({copy, compute}));
  f.workspaces.push_back(wide_buf);
  f.workspaces.push_back(padded);
  f.body = lower::Seq({zero_slack, conv_stmt, f.body});
  f.prefer_vector_bits = p.prefer_vector_bits;
  *out = std::move(f);
  return true;
}

}  // namespace ember::compiler::schedule
