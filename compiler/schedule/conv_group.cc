// Matching of conv + epilogue groups and lowering of their epilogue (see conv_group.h).
#include "conv_group.h"

#include <ember/compiler/ir/layout.h>
#include <ember/compiler/ir/op_registry.h>
#include <ember/compiler/ir/weight_layout.h>
#include <ember/compiler/ir/window_attrs.h>

#include <map>
#include <unordered_map>

#include "../ops/op_common.h"
#include "loop_builders.h"

namespace ember::compiler::schedule {
namespace {

bool IsF32(DLDataType t) { return t.code == kDLFloat && t.bits == 32 && t.lanes == 1; }

// The conv node, when every other node is elementwise/broadcast with a compute rule.
const Node* FindSingleConv(const FusedGroup& group) {
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

// The NCHW shape of a value stored in `block` (0: NCHW); empty when it is not stored so.
std::vector<int64_t> NchwShape(const TensorType& t, int64_t block) {
  if (block < 0) return {};
  if (block == 0) return t.shape;
  if (t.shape.size() != 5 || t.shape[4] != block) return {};
  return UnblockedShape(t.shape);
}

bool ReadGeometry(const Node& conv, const Graph& g, ConvShape* s) {
  const int64_t in_block = LayoutBlock(conv.GetString(kDataLayoutAttr, "NCHW"));
  const int64_t out_block = LayoutBlock(conv.GetString(kOutLayoutAttr, "NCHW"));
  const TensorType& x = g.value(conv.inputs[0]).type;
  const TensorType& wt = g.value(conv.inputs[1]).type;
  const TensorType& o = g.value(conv.outputs[0]).type;
  const TensorType xt{NchwShape(x, in_block), x.dtype}, ot{NchwShape(o, out_block), o.dtype};
  if (xt.shape.size() != 4 || wt.shape.size() != 4 || ot.shape.size() != 4) return false;
  if (!IsF32(xt.dtype) || !IsF32(wt.dtype) || !IsF32(ot.dtype)) return false;
  // kernel_shape, not W's spatial dims: Winograd weights hold transformed kernels.
  WindowAttrs win;
  std::string why;
  if (!WindowAttrs::Read(conv, 2, {wt.shape[2], wt.shape[3]}, &win, &why) || !win.Undilated()) {
    return false;
  }
  const std::vector<int64_t>&kernel = win.kernel, &strides = win.strides, &pads = win.pads;
  *s = ConvShape{xt.shape[0], xt.shape[1], xt.shape[2], xt.shape[3], ot.shape[1], ot.shape[2],
                 ot.shape[3], kernel[0],   kernel[1],   strides[0],  strides[1],  pads[0],
                 pads[1],     win.group,   0,           0,           in_block,    out_block};
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
  const Node* conv = FindSingleConv(group);
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
  if (gout.shape != g.value(conv->outputs[0]).type.shape || !IsF32(gout.dtype)) return false;
  m->conv = conv;
  m->x_id = conv->inputs[0];
  m->w_id = conv->inputs[1];
  m->bias_id = has_bias ? conv->inputs[2] : -1;
  m->s = s;
  return true;
}

}  // namespace

bool IsGroupInput(const FusedGroup& group, int vid) {
  for (int v : group.inputs) {
    if (v == vid) return true;
  }
  return false;
}

bool MatchConvGroup(const FusedGroup& group, ConvGroup* m) {
  return MatchAnyConvGroup(group, m) && !m->conv->HasAttr(kWinogradTileAttr);
}

bool MatchWinogradConvGroup(const FusedGroup& group, ConvGroup* m) {
  return MatchAnyConvGroup(group, m) && m->conv->HasAttr(kWinogradTileAttr);
}

te::Expr EpilogueOnBlockVector(const ConvEpilogueAt& at, const te::Expr& n, const te::Expr& cb,
                               const te::Expr& oh, const te::Expr& ow, const te::Expr& acc,
                               int lanes) {
  te::Expr lane = te::MakeVar("lane");
  return lower::VectorizeLanes(at({n, cb, oh, ow, lane}, acc), lane.get(), te::Expr(0), lanes);
}

bool EpilogueVectorizes(const ConvEpilogueAt& at, int lanes) {
  te::Expr acc = te::MakeVar("acc", te::WithLanes(te::Float(32), lanes));
  return EpilogueOnBlockVector(at, te::MakeVar("n"), te::MakeVar("cb"), te::MakeVar("h"),
                               te::MakeVar("w"), acc, lanes)
      .defined();
}

lower::Buffer NewFloatBuffer(const std::string& name, int64_t size, lower::BufferScope scope) {
  return lower::NewBuffer(name, te::Float(32), size, scope);
}

lower::Buffer NewVectorAccumulator(const std::string& name, int64_t lanes) {
  return lower::NewBuffer(name, te::WithLanes(te::Float(32), static_cast<int>(lanes)), 1,
                          lower::BufferScope::kLocal);
}

BroadcastTile::BroadcastTile(
    const std::string& prefix, int64_t rows, int64_t vectors, int lanes,
    const std::function<te::Expr(int64_t r)>& x, const std::function<te::Expr(int64_t v)>& w,
    const std::function<lower::Stmt(int64_t r, int64_t v, const te::Expr& acc)>& store_at,
    lower::LoweredFunc* f) {
  for (int64_t r = 0; r < rows; ++r) {
    te::Expr xr = x(r);  // broadcast against the tile's weight vectors
    for (int64_t v = 0; v < vectors; ++v) {
      lower::Buffer acc =
          NewVectorAccumulator(prefix + std::to_string(r) + "_" + std::to_string(v), lanes);
      f->locals.push_back(acc);
      init.push_back(lower::Store(acc, 0, te::Const(acc->dtype, 0)));
      update.push_back(lower::Store(acc, 0, lower::BufferLoad(acc, 0) + xr * w(v)));
      store.push_back(store_at(r, v, lower::BufferLoad(acc, 0)));
    }
  }
}

lower::Stmt BroadcastTile::With(const lower::Stmt& reduction) const {
  std::vector<lower::Stmt> tile = init;
  tile.push_back(reduction);
  tile.insert(tile.end(), store.begin(), store.end());
  return lower::Seq(tile);
}

te::Expr OutputChannel(const ConvShape& s, const std::vector<te::Expr>& i) {
  return s.out_block == 0 ? i[1] : i[1] * s.out_block + i[4];
}

namespace {

// Applies one epilogue node's compute rule to the tensors built so far.
bool ComputeNode(const Graph& g, const Node& node, std::map<int, te::Tensor>* env) {
  const OpDef* def = OpRegistry::Global()->Find(node.op);
  std::vector<te::Tensor> ins;
  for (int vid : node.inputs) {
    auto it = env->find(vid);
    if (vid == kAbsentValue) {
      ins.push_back(te::Tensor());
    } else if (it != env->end()) {
      ins.push_back(it->second);
    } else if (g.value(vid).is_constant() && g.value(vid).constant->NumElements() <= 256) {
      ins.push_back(ops::ConstTensor(*g.value(vid).constant, g.value(vid).name));
    } else if (g.value(vid).is_constant()) {
      ins.push_back(te::Tensor());
    } else {
      return false;
    }
  }
  std::vector<TensorType> out_types;
  for (int o : node.outputs) out_types.push_back(g.value(o).type);
  std::vector<te::Tensor> res = def->compute()(node, ins, out_types);
  if (res.size() < node.outputs.size()) return false;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (res[k].shape() != out_types[k].shape ||
        res[k].dtype() != ops::ExprType(out_types[k].dtype)) {
      return false;
    }
    (*env)[node.outputs[k]] = res[k];
  }
  return true;
}

}  // namespace

bool LowerConvEpilogue(const FusedGroup& group, const ConvGroup& m, int64_t result_elems,
                       const ConvResultIndex& index, const lower::ScheduleOptions& opts,
                       lower::LoweredFunc* f, lower::Buffer* result, lower::Buffer* x,
                       lower::Buffer* w) {
  const Graph& g = *group.graph;
  const Node& conv = *m.conv;
  ops::GraphScope scope(&g);
  std::map<int, te::Tensor> env;
  std::vector<te::Tensor> inputs;
  std::vector<lower::ArgInfo> args;
  for (int vid : group.inputs) {
    const Value& v = g.value(vid);
    te::Tensor t = te::Placeholder(v.type.shape, ops::ExprType(v.type.dtype), v.name);
    env[vid] = t;
    inputs.push_back(t);
    args.push_back(lower::ArgInfo{v.name, v.type.shape, v.type.dtype, nullptr});
  }
  const size_t num_inputs = inputs.size();
  const std::string result_name = conv.name + "_result";
  te::Tensor raw = te::Placeholder({result_elems}, te::Float(32), result_name);
  inputs.push_back(raw);
  args.push_back(lower::ArgInfo{result_name, {result_elems}, DLDataType{kDLFloat, 32, 1}, nullptr});
  te::Tensor bias = m.bias_id >= 0 ? env.at(m.bias_id) : te::Tensor();
  env[conv.outputs[0]] = te::Compute(
      g.value(conv.outputs[0]).type.shape,
      [&](const std::vector<te::Expr>& i) {
        te::Expr v = raw(index(i));
        if (bias.defined()) v = v + bias(OutputChannel(m.s, i));
        return v;
      },
      conv.name + "_out");
  for (const Node* node : group.nodes) {
    if (node != &conv && !ComputeNode(g, *node, &env)) return false;
  }
  auto out = env.find(group.outputs[0]);
  if (out == env.end()) return false;
  const Value& gout = g.value(group.outputs[0]);
  args.push_back(lower::ArgInfo{gout.name, gout.type.shape, gout.type.dtype, nullptr});
  lower::LoweredFunc lf = lower::LowerTensors(group.func_name, inputs, {out->second}, args, opts);

  // The raw result is a workspace of the function, not one of its arguments.
  lower::Buffer raw_buf = lf.args[num_inputs].buffer;
  auto* rb = const_cast<lower::BufferNode*>(raw_buf.get());
  rb->scope = lower::BufferScope::kWorkspace;
  rb->arg_index = -1;
  rb->name += "_ws";
  lf.args.erase(lf.args.begin() + static_cast<std::ptrdiff_t>(num_inputs));
  for (size_t i = num_inputs; i < lf.args.size(); ++i) {
    const_cast<lower::BufferNode*>(lf.args[i].buffer.get())->arg_index = static_cast<int>(i);
  }
  lower::Buffer xb, wb;
  for (size_t i = 0; i < num_inputs; ++i) {
    if (group.inputs[i] == m.x_id && !xb) xb = lf.args[i].buffer;
    if (group.inputs[i] == m.w_id && !wb) wb = lf.args[i].buffer;
  }
  if (!xb || !wb) return false;
  lf.workspaces.push_back(raw_buf);
  *f = std::move(lf);
  *result = raw_buf;
  *x = xb;
  *w = wb;
  return true;
}

namespace {

using VarMap = std::unordered_map<const te::ExprNode*, te::Expr>;

// Rebuilds an expression with variables replaced; te computes are inlined, placeholders of the
// group's inputs become loads of their argument buffers and the conv's raw result becomes
// `raw_value` (checked to be read at `raw_index` only).
struct EpilogueInliner {
  std::unordered_map<const te::TensorNode*, lower::Buffer> args;
  const te::TensorNode* raw = nullptr;
  std::vector<te::Expr> raw_index;
  te::Expr raw_value;
  bool ok = true;

  te::Expr Visit(const te::Expr& e, const VarMap& vars) {
    if (!e.defined()) return e;
    switch (e.kind()) {
      case te::ExprKind::kIntImm:
      case te::ExprKind::kFloatImm:
        return e;
      case te::ExprKind::kVar: {
        auto it = vars.find(e.get());
        return it == vars.end() ? e : it->second;
      }
      case te::ExprKind::kBinary: {
        auto* b = e.as<te::BinaryNode>();
        return te::Binary(b->op, Visit(b->a, vars), Visit(b->b, vars));
      }
      case te::ExprKind::kNot:
        return te::Not(Visit(e.as<te::NotNode>()->a, vars));
      case te::ExprKind::kSelect: {
        auto* s = e.as<te::SelectNode>();
        return te::Select(Visit(s->cond, vars), Visit(s->true_value, vars),
                          Visit(s->false_value, vars));
      }
      case te::ExprKind::kCast:
        return te::Cast(e.dtype(), Visit(e.as<te::CastNode>()->value, vars));
      case te::ExprKind::kCall: {
        auto* c = e.as<te::CallNode>();
        std::vector<te::Expr> a;
        for (const te::Expr& x : c->args) a.push_back(Visit(x, vars));
        return te::Expr(std::make_shared<te::CallNode>(c->dtype, c->fn, std::move(a)));
      }
      case te::ExprKind::kBufferLoad: {
        auto* l = e.as<lower::BufferLoadNode>();
        return lower::BufferLoad(l->buffer, Visit(l->index, vars));
      }
      case te::ExprKind::kTensorLoad:
        return Load(e.as<te::TensorLoadNode>(), vars);
      case te::ExprKind::kReduce:
        break;
    }
    ok = false;
    return te::Const(te::Float(32), 0);
  }

  te::Expr Load(const te::TensorLoadNode* l, const VarMap& vars) {
    const te::TensorNode* t = l->tensor.get();
    std::vector<te::Expr> idx;
    for (const te::Expr& i : l->indices) idx.push_back(Visit(i, vars));
    if (t == raw) {
      for (size_t d = 0; d < idx.size(); ++d) {
        const auto* imm = idx[d].as<te::IntImmNode>();
        bool zero_of_unit = t->shape[d] == 1 && imm != nullptr && imm->value == 0;
        if (idx[d].get() != raw_index[d].get() && !zero_of_unit) ok = false;
      }
      return raw_value;
    }
    auto it = args.find(t);
    if (it != args.end()) {
      te::Expr flat = 0;
      for (size_t d = 0; d < idx.size(); ++d) flat = flat * t->shape[d] + idx[d];
      return lower::BufferLoad(it->second, flat);
    }
    if (!t->body.defined() || t->body.kind() == te::ExprKind::kReduce) {
      ok = false;
      return te::Const(te::Float(32), 0);
    }
    VarMap inner;
    for (size_t d = 0; d < t->axis.size(); ++d) inner[t->axis[d].var.get()] = idx[d];
    return Visit(t->body, inner);
  }
};

}  // namespace

bool BuildConvEpilogueAt(const FusedGroup& group, const ConvGroup& m, lower::LoweredFunc* f,
                         lower::Buffer* x, lower::Buffer* w, ConvEpilogueAt* at) {
  const ConvShape& s = m.s;
  AnchorOperands ops{m.x_id, m.w_id, m.bias_id, [&s](const std::vector<te::Expr>& i) {
                       return std::vector<te::Expr>{OutputChannel(s, i)};
                     }};
  return BuildEpilogueAt(group, *m.conv, ops, f, x, w, at);
}

bool BuildEpilogueAt(const FusedGroup& group, const Node& anchor, const AnchorOperands& m,
                     lower::LoweredFunc* f, lower::Buffer* x, lower::Buffer* w,
                     ConvEpilogueAt* at) {
  const Graph& g = *group.graph;
  ops::GraphScope scope(&g);
  std::map<int, te::Tensor> env;
  lower::LoweredFunc lf;
  lf.name = group.func_name;
  EpilogueInliner inl;
  lower::Buffer xb, wb;
  for (int vid : group.inputs) {
    const Value& v = g.value(vid);
    te::Tensor t = te::Placeholder(v.type.shape, ops::ExprType(v.type.dtype), v.name);
    env[vid] = t;
    lf.args.push_back(lower::ArgInfo{v.name, v.type.shape, v.type.dtype, nullptr});
    lf.args.back().buffer =
        lower::NewArgBuffer(lf.args.back(), static_cast<int>(lf.args.size()) - 1);
    inl.args[t.get()] = lf.args.back().buffer;
    if (vid == m.x_id && !xb) xb = lf.args.back().buffer;
    if (vid == m.w_id && !wb) wb = lf.args.back().buffer;
  }
  const std::vector<int64_t>& oshape = g.value(anchor.outputs[0]).type.shape;
  te::Tensor raw = te::Placeholder(oshape, te::Float(32), anchor.name + "_raw");
  te::Tensor bias = m.bias_id >= 0 ? env.at(m.bias_id) : te::Tensor();
  env[anchor.outputs[0]] = te::Compute(
      oshape,
      [&](const std::vector<te::Expr>& i) {
        te::Expr v = raw(i);
        if (bias.defined()) v = v + bias(m.bias_index(i));
        return v;
      },
      anchor.name + "_out");
  for (const Node* node : group.nodes) {
    if (node != &anchor && !ComputeNode(g, *node, &env)) return false;
  }
  auto out = env.find(group.outputs[0]);
  if (out == env.end() || out->second.dtype() != te::Float(32) || out->second.shape() != oshape) {
    return false;
  }
  const Value& gout = g.value(group.outputs[0]);
  lf.args.push_back(lower::ArgInfo{gout.name, gout.type.shape, gout.type.dtype, nullptr});
  lf.args.back().buffer = lower::NewArgBuffer(lf.args.back(), static_cast<int>(lf.args.size()) - 1);
  if (!xb || !wb) return false;

  // Inline once at symbolic indices with a marker for the raw result; callers substitute.
  std::vector<te::Expr> vars;
  VarMap none;
  for (size_t d = 0; d < oshape.size(); ++d) vars.push_back(te::MakeVar("i" + std::to_string(d)));
  te::Expr marker = te::MakeVar("conv_acc", te::Float(32));
  inl.raw = raw.get();
  inl.raw_index = vars;
  inl.raw_value = marker;
  te::Expr body = inl.Visit(out->second(vars), none);
  if (!inl.ok) return false;
  *f = std::move(lf);
  *x = xb;
  *w = wb;
  *at = [body, vars, marker](const std::vector<te::Expr>& i, const te::Expr& acc) {
    VarMap sub;
    for (size_t d = 0; d < vars.size(); ++d) sub[vars[d].get()] = i[d];
    sub[marker.get()] = acc;
    EpilogueInliner rw;
    return rw.Visit(body, sub);
  };
  return true;
}

// Applying the epilogue at (n, oc, 0, q), q = oh * OW + ow, addresses every operand right when
// each reads the whole output plane or none of it (no broadcast along one spatial axis only).
bool EpilogueReadsPlaneFlat(const ConvEpilogueAt& at, int64_t ow) {
  te::Expr h = te::MakeVar("h"), w = te::MakeVar("w");
  te::Expr e = at({te::MakeVar("n"), te::MakeVar("c"), h, w}, te::Const(te::Float(32), 0));
  bool flat = true;
  lower::VisitLoads(e, [&](const lower::BufferLoadNode* l) {
    int64_t ch, cw;
    if (!lower::LinearCoeff(l->index, h.get(), &ch) ||
        !lower::LinearCoeff(l->index, w.get(), &cw) || (cw != 0 && cw != 1) || ch != cw * ow) {
      flat = false;
    }
  });
  return flat;
}

lower::Stmt PadConvInput(const ConvShape& s, const lower::Buffer& x, const lower::Buffer& padded,
                         const te::Expr& n, int64_t ph, int64_t pw,
                         const lower::ScheduleOptions& opts) {
  const int64_t unit = std::max<int64_t>(1, s.in_block), planes = s.c / unit;
  te::Expr c = te::MakeVar("c"), y = te::MakeVar("y");
  te::Expr sy = y - s.pad_t;
  te::Expr dst_row = (c * ph + y) * pw * unit;
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
  row = lower::For(y, ph, lower::ForKind::kSerial, row);
  bool par = opts.parallel && s.c * ph * pw >= opts.parallel_min_work && planes > 1;
  return lower::For(c, planes, par ? lower::ForKind::kParallel : lower::ForKind::kSerial, row);
}

}  // namespace ember::compiler::schedule
