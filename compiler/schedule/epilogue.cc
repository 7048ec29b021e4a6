// The epilogue of a group around its anchor's result (see epilogue.h).
#include "epilogue.h"

#include <ember/compiler/ir/op_registry.h>

#include <map>
#include <unordered_map>

#include "../ops/op_common.h"

namespace ember::compiler::schedule {
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

using VarMap = std::unordered_map<const te::ExprNode*, te::Expr>;

// Rebuilds an expression with variables replaced; te computes are inlined, placeholders of the
// group's inputs become loads of their argument buffers and the anchor's raw result becomes
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
      case te::ExprKind::kCast: {
        // The value may have become a vector (the accumulator): the cast takes its lanes.
        te::Expr v = Visit(e.as<te::CastNode>()->value, vars);
        return te::Cast(te::WithLanes(e.dtype(), v.dtype().lanes), v);
      }
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

bool IsGroupInput(const FusedGroup& group, int vid) {
  for (int v : group.inputs) {
    if (v == vid) return true;
  }
  return false;
}

lower::Buffer GroupInputBuffer(const FusedGroup& group, const lower::LoweredFunc& f, int vid) {
  for (size_t i = 0; i < group.inputs.size(); ++i) {
    if (group.inputs[i] == vid) return f.args[i].buffer;
  }
  return nullptr;
}

bool LowerEpilogue(const FusedGroup& group, const Node& anchor, const lower::ArgInfo& raw,
                   const AnchorOutput& output, const lower::ScheduleOptions& opts,
                   lower::LoweredFunc* f, lower::Buffer* result) {
  const Graph& g = *group.graph;
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
  te::Tensor raw_tensor = te::Placeholder(raw.shape, te::Float(32), raw.name);
  inputs.push_back(raw_tensor);
  args.push_back(raw);
  env[anchor.outputs[0]] = output(raw_tensor, env);
  for (const Node* node : group.nodes) {
    if (node != &anchor && !ComputeNode(g, *node, &env)) return false;
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
  lf.workspaces.push_back(raw_buf);
  *f = std::move(lf);
  *result = raw_buf;
  return true;
}

lower::LoweredFunc GroupFunction(const FusedGroup& group) {
  const Graph& g = *group.graph;
  lower::LoweredFunc f;
  f.name = group.func_name;
  std::vector<int> values = group.inputs;
  values.push_back(group.outputs.at(0));
  for (int vid : values) {
    const Value& v = g.value(vid);
    f.args.push_back(lower::ArgInfo{v.name, v.type.shape, v.type.dtype, nullptr});
    f.args.back().buffer = lower::NewArgBuffer(f.args.back(), static_cast<int>(f.args.size()) - 1);
  }
  return f;
}

bool BuildEpilogueAt(const FusedGroup& group, const Node& anchor, const AnchorOperands& m,
                     lower::LoweredFunc* f, lower::Buffer* x, lower::Buffer* w, EpilogueAt* at,
                     BiasAt* bias_at) {
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
  te::Tensor raw = te::Placeholder(oshape, m.result, anchor.name + "_raw");
  te::Tensor bias = m.bias_id >= 0 ? env.at(m.bias_id) : te::Tensor();
  env[anchor.outputs[0]] = te::Compute(
      oshape,
      [&](const std::vector<te::Expr>& i) {
        te::Expr v = raw(i);
        if (bias.defined() && bias_at == nullptr) v = v + bias(m.bias_index(i));
        return v;
      },
      anchor.name + "_out");
  for (const Node* node : group.nodes) {
    if (node != &anchor && !ComputeNode(g, *node, &env)) return false;
  }
  auto out = env.find(group.outputs[0]);
  // float32, or what the group stores (see MatchAnyConvGroup): a float16 result rounded as memory
  // holds it, an int32 one cast from the exact float sum, 8-bit integers (a requantization)
  // after int32 sums or an exact float product (a QLinearMatMul on the float path).
  const te::DataType dt = out == env.end() ? te::Float(32) : out->second.dtype();
  const bool narrowed = dt == te::UInt(8) || dt == te::Int(8);
  if (out == env.end() || out->second.shape() != oshape ||
      (dt != te::Float(32) && dt != te::Float(16) && dt != te::Int(32) && !narrowed)) {
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
  te::Expr marker = te::MakeVar("conv_acc", m.result);
  inl.raw = raw.get();
  inl.raw_index = vars;
  inl.raw_value = marker;
  te::Expr body = inl.Visit(out->second(vars), none);
  te::Expr bias_body = bias.defined() ? inl.Visit(bias(m.bias_index(vars)), none) : te::Expr();
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
  if (bias_at != nullptr) {
    *bias_at = [bias_body, vars](const std::vector<te::Expr>& i) {
      if (!bias_body.defined()) return te::Expr();
      VarMap sub;
      for (size_t d = 0; d < vars.size(); ++d) sub[vars[d].get()] = i[d];
      EpilogueInliner rw;
      return rw.Visit(bias_body, sub);
    };
  }
  return true;
}

// Applying the epilogue at (n, oc, 0, q), q = oh * OW + ow, addresses every operand right when
// each reads the whole output plane or none of it (no broadcast along one spatial axis only).
namespace {

// Whether every load of `e` is linear in h and w with h's coefficient ow times w's: the plane
// read flat. NCHW operands (`blocked` false) must step one element per pixel or not at all.
bool LoadsPlaneFlat(const te::Expr& e, const te::Expr& h, const te::Expr& w, int64_t ow,
                    bool blocked) {
  bool flat = true;
  lower::VisitLoads(e, [&](const lower::BufferLoadNode* l) {
    int64_t ch, cw;
    if (!lower::LinearCoeff(l->index, h.get(), &ch) ||
        !lower::LinearCoeff(l->index, w.get(), &cw) || (!blocked && cw != 0 && cw != 1) ||
        ch != cw * ow) {
      flat = false;
    }
  });
  return flat;
}

}  // namespace

bool EpilogueReadsPlaneFlat(const EpilogueAt& at, int64_t ow) {
  te::Expr h = te::MakeVar("h"), w = te::MakeVar("w");
  te::Expr e = at({te::MakeVar("n"), te::MakeVar("c"), h, w}, te::Const(te::Float(32), 0));
  return LoadsPlaneFlat(e, h, w, ow, false);
}

bool EpilogueReadsBlockPlaneFlat(const EpilogueAt& at, int64_t ow) {
  te::Expr h = te::MakeVar("h"), w = te::MakeVar("w");
  te::Expr e = at({te::MakeVar("n"), te::MakeVar("cb"), h, w, te::MakeVar("lane")},
                  te::Const(te::Float(32), 0));
  return LoadsPlaneFlat(e, h, w, ow, true);
}

te::Expr EpilogueOnBlockVector(const EpilogueAt& at, const te::Expr& n, const te::Expr& cb,
                               const te::Expr& oh, const te::Expr& ow, const te::Expr& acc,
                               int lanes) {
  te::Expr lane = te::MakeVar("lane");
  return lower::VectorizeLanes(at({n, cb, oh, ow, lane}, acc), lane.get(), te::Expr(0), lanes);
}

te::Expr BiasOnBlockVector(const BiasAt& bias, const te::Expr& n, const te::Expr& cb, int lanes) {
  te::Expr lane = te::MakeVar("lane");
  te::Expr row = bias ? bias({n, cb, te::Expr(0), te::Expr(0), lane}) : te::Expr();
  return row.defined() ? lower::VectorizeLanes(row, lane.get(), te::Expr(0), lanes) : row;
}

bool EpilogueVectorizes(const EpilogueAt& at, int lanes, te::DataType acc_type) {
  te::Expr acc = te::MakeVar("acc", te::WithLanes(acc_type, lanes));
  return EpilogueOnBlockVector(at, te::MakeVar("n"), te::MakeVar("cb"), te::MakeVar("h"),
                               te::MakeVar("w"), acc, lanes)
      .defined();
}

}  // namespace ember::compiler::schedule
