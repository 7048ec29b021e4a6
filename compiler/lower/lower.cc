// te -> loop IR with the default schedule: inline injective stages, materialise reductions and
// outputs, drop unit loops, parallelise the outermost loop of big nests, mark innermost loops
// for vectorisation.
#include "ember/compiler/lower.h"

#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "../ops/op_common.h"
#include "expr_mutator.h"

namespace ember::compiler::lower {

using te::Expr;
using te::ExprKind;
using te::Tensor;
using te::TensorNode;

Buffer NewBuffer(const std::string& name, te::DataType dtype, int64_t size, BufferScope scope,
                 int arg_index) {
  auto b = std::make_shared<BufferNode>();
  for (char c : name) b->name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (b->name.empty()) b->name = "t";
  b->dtype = dtype;
  b->size = size;
  b->scope = scope;
  b->arg_index = arg_index;
  return b;
}

Buffer NewArgBuffer(const ArgInfo& a, int index) {
  int64_t size = 1;
  for (int64_t d : a.shape) size *= d;
  return NewBuffer(a.name, ops::ExprType(a.dtype), size, BufferScope::kArg, index);
}

Expr BufferLoad(const Buffer& b, Expr index) {
  return Expr(std::make_shared<BufferLoadNode>(b, std::move(index)));
}

Expr VectorLoad(const Buffer& b, Expr index, int lanes) {
  if (lanes == 1) return BufferLoad(b, std::move(index));
  return Expr(
      std::make_shared<BufferLoadNode>(te::WithLanes(b->dtype, lanes), b, std::move(index)));
}

Stmt CheckIndices(Buffer buffer, int64_t count, int64_t extent, std::string message, int64_t first,
                  int64_t step, bool non_negative) {
  auto n = std::make_shared<IndexCheckNode>();
  n->first = first;
  n->step = step;
  n->non_negative = non_negative;
  n->buffer = std::move(buffer);
  n->count = count;
  n->extent = extent;
  n->message = std::move(message);
  return n;
}

Stmt For(Expr var, int64_t extent, ForKind kind, Stmt body) {
  auto n = std::make_shared<ForNode>();
  n->var = std::move(var);
  n->extent = extent;
  n->for_kind = kind;
  n->body = std::move(body);
  return n;
}

Stmt KeepScalarFor(Expr var, int64_t extent, Stmt body) {
  // No loop for one trip, so nothing binds var any more: its only value, 0, takes its place.
  if (extent == 1) return SubstituteVar(body, var, 0);
  auto n = std::make_shared<ForNode>();
  n->var = std::move(var);
  n->extent = extent;
  n->keep_scalar = true;
  n->body = std::move(body);
  return n;
}

Stmt Limited(Stmt loop, Expr limit) {
  if (!loop) return loop;
  if (loop->kind != StmtKind::kFor) return If(limit > Expr(0), loop);
  auto n = std::make_shared<ForNode>(*static_cast<const ForNode*>(loop.get()));
  if (n->for_kind == ForKind::kParallel) {
    throw std::logic_error("lower: a parallel loop takes no run-time limit");
  }
  n->limit = n->limit.defined() ? te::Min(n->limit, limit) : limit;
  return n;
}

Stmt Prefetch(Buffer buffer, Expr index) {
  auto n = std::make_shared<PrefetchNode>();
  n->buffer = std::move(buffer);
  n->index = std::move(index);
  return n;
}

Stmt Store(Buffer buffer, Expr index, Expr value) {
  auto n = std::make_shared<StoreNode>();
  n->buffer = std::move(buffer);
  n->index = std::move(index);
  n->value = std::move(value);
  return n;
}

Stmt If(Expr cond, Stmt then_case, Stmt else_case) {
  auto n = std::make_shared<IfNode>();
  n->cond = std::move(cond);
  n->then_case = std::move(then_case);
  n->else_case = std::move(else_case);
  return n;
}

Stmt Seq(std::vector<Stmt> stmts) {
  if (stmts.size() == 1) return stmts[0];
  auto n = std::make_shared<SeqNode>();
  n->stmts = std::move(stmts);
  return n;
}

namespace {

// Rebuilds e with variables and whole subexpressions replaced; also lowers TensorLoads through
// `load`.
class Rewriter : public ExprMutator {
 public:
  std::function<Expr(const te::TensorLoadNode*, std::vector<Expr> idx)> load;
  VarMap vars;
  // Subexpressions replaced as a whole (by node identity).
  std::unordered_map<const te::ExprNode*, Expr> nodes;

  Expr Visit(const Expr& e) override {
    if (e.defined() && !nodes.empty()) {
      auto it = nodes.find(e.get());
      if (it != nodes.end()) return it->second;
    }
    return ExprMutator::Visit(e);
  }

 protected:
  Expr VisitVar(const Expr& var) override {
    auto it = vars.find(var.get());
    return it == vars.end() ? var : it->second;
  }
  Expr VisitTensorLoad(const te::TensorLoadNode* l, std::vector<Expr> idx) override {
    return load ? load(l, std::move(idx)) : l->tensor(idx);
  }
};

// True when every buffer load in e moves by at most `max_stride` elements per step of var.
bool LoadsVectorFriendly(const Expr& e, const te::ExprNode* var, int64_t max_stride) {
  if (!e.defined()) return true;
  switch (e.kind()) {
    case ExprKind::kBufferLoad: {
      auto* l = e.as<BufferLoadNode>();
      int64_t c;
      if (!LinearCoeff(l->index, var, &c) || c < 0 || c > max_stride) return false;
      return true;
    }
    case ExprKind::kBinary: {
      auto* b = e.as<te::BinaryNode>();
      return LoadsVectorFriendly(b->a, var, max_stride) &&
             LoadsVectorFriendly(b->b, var, max_stride);
    }
    case ExprKind::kNot:
      return LoadsVectorFriendly(e.as<te::NotNode>()->a, var, max_stride);
    case ExprKind::kSelect: {
      auto* s = e.as<te::SelectNode>();
      // Loads under a select are clamped by codegen, which turns them into gathers.
      if (Occurs(s->true_value, var) || Occurs(s->false_value, var)) {
        if (!LoadsVectorFriendly(s->true_value, var, 0) ||
            !LoadsVectorFriendly(s->false_value, var, 0)) {
          return false;
        }
      }
      return LoadsVectorFriendly(s->cond, var, max_stride);
    }
    case ExprKind::kCast:
      return LoadsVectorFriendly(e.as<te::CastNode>()->value, var, max_stride);
    case ExprKind::kCall:
      for (auto& a : e.as<te::CallNode>()->args) {
        if (!LoadsVectorFriendly(a, var, max_stride)) return false;
      }
      return true;
    default:
      return true;
  }
}

// The identity and the combining step of a sum, product, max or min reduction into acc. False
// for the arg reductions, which carry an index beside the value.
bool ReduceCombiner(te::ReduceOp op, te::DataType st, const Expr& acc, const Expr& src, Expr* init,
                    Expr* combined) {
  switch (op) {
    case te::ReduceOp::kSum:
      *init = te::Const(st, 0);
      *combined = acc + src;
      return true;
    case te::ReduceOp::kProd:
      *init = te::Const(st, 1);
      *combined = acc * src;
      return true;
    case te::ReduceOp::kMax:
      *init = te::MinValue(st);
      *combined = te::ReduceMaximum(acc, src);
      return true;
    case te::ReduceOp::kMin:
      *init = te::MaxValue(st);
      *combined = te::ReduceMinimum(acc, src);
      return true;
    default:
      return false;
  }
}

struct IterVarRef {
  Expr var;
  int64_t extent;
};

struct Stage {
  const TensorNode* tensor;
  Buffer buffer;  // null when inlined
};

class Lowerer {
 public:
  Lowerer(const std::string& name, const ScheduleOptions& opts) : opts_(opts) { func_.name = name; }

  LoweredFunc Run(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs,
                  const std::vector<ArgInfo>& arg_infos) {
    if (arg_infos.size() != inputs.size() + outputs.size()) {
      throw std::runtime_error("lower: argument count mismatch in " + func_.name);
    }
    func_.args = arg_infos;
    for (size_t i = 0; i < arg_infos.size(); ++i) {
      const Tensor& t = i < inputs.size() ? inputs[i] : outputs[i - inputs.size()];
      Buffer b = NewBuffer(arg_infos[i].name.empty() ? t->name : arg_infos[i].name, t.dtype(),
                           t.NumElements(), BufferScope::kArg, static_cast<int>(i));
      func_.args[i].buffer = b;
      if (i < inputs.size()) {
        if (!t.is_placeholder()) throw std::runtime_error("lower: input is not a placeholder");
        buffers_[t.get()] = b;
      } else {
        out_buffers_.push_back(b);
      }
    }
    // Outputs that are placeholders or repeated are copied through a fresh compute.
    std::vector<Tensor> outs;
    std::set<const TensorNode*> seen;
    for (const Tensor& t : outputs) {
      Tensor o = t;
      if (t.is_placeholder() || !seen.insert(t.get()).second) {
        o = te::Compute(
            t.shape(), [&](const std::vector<Expr>& idx) { return t(idx); }, t->name + "_copy");
        seen.insert(o.get());
      }
      outs.push_back(o);
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      if (outs[k].dtype() != out_buffers_[k]->dtype &&
          !(te::IsBool(outs[k].dtype()) && te::IsBool(out_buffers_[k]->dtype))) {
        throw std::runtime_error("lower: output " + std::to_string(k) + " of " + func_.name +
                                 " computes " + te::DataTypeName(outs[k].dtype()) +
                                 " but the graph declares " +
                                 te::DataTypeName(out_buffers_[k]->dtype));
      }
      buffers_[outs[k].get()] = out_buffers_[k];
    }
    // Post-order over materialised stages.
    std::vector<const TensorNode*> order;
    std::set<const TensorNode*> visited;
    std::function<void(const TensorNode*)> dfs = [&](const TensorNode* t) {
      if (!visited.insert(t).second) return;
      for (auto& in : t->inputs) dfs(in.get());
      order.push_back(t);
    };
    for (auto& o : outs) dfs(o.get());
    std::vector<Stmt> body;
    for (const TensorNode* t : order) {
      if (!t->body.defined()) {
        if (!buffers_.count(t)) {
          throw std::runtime_error("lower: " + func_.name + " reads tensor " + t->name +
                                   " which is not an argument");
        }
        continue;
      }
      bool materialise = buffers_.count(t) || t->body.kind() == ExprKind::kReduce || t->materialize;
      if (!materialise) continue;
      if (!buffers_.count(t)) {
        int64_t size = 1;
        for (int64_t d : t->shape) size *= d;
        Buffer b = NewBuffer(t->name + "_ws", t->dtype, size, BufferScope::kWorkspace);
        buffers_[t] = b;
        func_.workspaces.push_back(b);
      }
      body.push_back(LowerStage(t, buffers_[t]));
    }
    func_.body = UnitStrideVectorIndices(Seq(body));
    return func_;
  }

 private:
  static Expr Flatten(const std::vector<int64_t>& shape, const std::vector<Expr>& idx) {
    Expr flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
    return flat;
  }

  // The lowered body of an inlined stage, over its own axis vars (cached).
  const Expr& InlineBody(const TensorNode* t) {
    auto it = inline_cache_.find(t);
    if (it != inline_cache_.end()) return it->second;
    Expr lowered = LowerExpr(t->body);
    return inline_cache_.emplace(t, lowered).first->second;
  }

  Expr LowerExpr(const Expr& e) {
    Rewriter rw;
    rw.load = [this](const te::TensorLoadNode* l, std::vector<Expr> idx) -> Expr {
      const TensorNode* t = l->tensor.get();
      auto it = buffers_.find(t);
      if (it != buffers_.end()) return BufferLoad(it->second, Flatten(t->shape, idx));
      if (!t->body.defined()) {
        throw std::runtime_error("lower: " + func_.name + " reads tensor " + t->name +
                                 " which is not an argument");
      }
      if (t->body.kind() == ExprKind::kReduce) {
        throw std::runtime_error("lower: reduction " + t->name + " read before it is computed");
      }
      Rewriter sub;
      for (size_t d = 0; d < t->axis.size(); ++d) sub.vars[t->axis[d].var.get()] = idx[d];
      return sub.Visit(InlineBody(t));
    };
    return rw.Visit(e);
  }

  Buffer NewLocal(const std::string& name, te::DataType dtype, int64_t size = 1) {
    Buffer b = lower::NewBuffer(name, dtype, size, BufferScope::kLocal);
    func_.locals.push_back(b);
    return b;
  }

  Stmt LowerStage(const TensorNode* t, const Buffer& out) {
    int64_t points = 1;
    for (int64_t d : t->shape) points *= d;
    std::vector<Expr> idx;
    for (auto& a : t->axis) idx.push_back(a.var);
    Expr flat = Flatten(t->shape, idx);
    Stmt inner;
    int64_t work = points;
    bool is_reduce = t->body.kind() == ExprKind::kReduce;
    if (!is_reduce) {
      return PartitionedNest(t, out, flat, LowerExpr(t->body), FullRanges(t), work);
    } else {
      auto* r = t->body.as<te::ReduceNode>();
      Expr src = LowerExpr(r->source);
      Expr cond = r->condition.defined() ? LowerExpr(r->condition) : Expr();
      int64_t rext = 1;
      for (auto& a : r->axes) rext *= a.extent;
      work *= std::max<int64_t>(rext, 1);
      te::DataType st = src.dtype();
      if (Stmt row = LowerReduceRowwise(t, r, src, cond, out, work)) return row;
      if (points == 1) {
        if (Stmt whole = LowerReduceToOne(t, r, src, cond, out, work)) return whole;
      }
      Buffer acc = NewLocal(t->name + "_acc", st);
      Expr accv = BufferLoad(acc, 0);
      std::vector<Stmt> init, update;
      Expr result;
      if (r->op == te::ReduceOp::kArgMax || r->op == te::ReduceOp::kArgMin) {
        Buffer acci = NewLocal(t->name + "_idx", te::Int(64));
        bool is_max = r->op == te::ReduceOp::kArgMax;
        init.push_back(Store(acc, 0, is_max ? te::MinValue(st) : te::MaxValue(st)));
        init.push_back(Store(acci, 0, te::IntImm(te::Int(64), 0)));
        Expr better = is_max ? (r->select_last_index ? src >= accv : src > accv)
                             : (r->select_last_index ? src <= accv : src < accv);
        if (cond.defined()) better = cond && better;
        Expr k = r->axes[0].var;
        update.push_back(Store(acci, 0, te::Select(better, k, BufferLoad(acci, 0))));
        update.push_back(Store(acc, 0, te::Select(better, src, accv)));
        result = BufferLoad(acci, 0);
      } else {
        Expr init_v;
        Expr combined;
        ReduceCombiner(r->op, st, accv, src, &init_v, &combined);
        if (cond.defined()) combined = te::Select(cond, combined, accv);
        init.push_back(Store(acc, 0, init_v));
        update.push_back(Store(acc, 0, combined));
        result = accv;
      }
      Stmt red = Seq(update);
      for (int i = static_cast<int>(r->axes.size()) - 1; i >= 0; --i) {
        const auto& ax = r->axes[i];
        if (ax.extent == 1) {
          red = SubstituteVar(red, ax.var, 0);
          continue;
        }
        ForKind kind =
            (i == static_cast<int>(r->axes.size()) - 1) ? ForKind::kVectorized : ForKind::kSerial;
        red = For(ax.var, ax.extent, kind, red);
      }
      std::vector<Stmt> seq = init;
      if (points > 0) seq.push_back(red);
      seq.push_back(Store(out, flat, te::Cast(out->dtype, result)));
      inner = Seq(seq);
    }
    return SpatialLoops(t, inner, FullRanges(t), /*vectorize=*/false, work);
  }

  // The part [begin, begin + extent) of an output axis a loop covers.
  struct AxisRange {
    int64_t begin, extent;
  };

  static std::vector<AxisRange> FullRanges(const TensorNode* t) {
    std::vector<AxisRange> ranges;
    for (int64_t d : t->shape) ranges.push_back({0, d});
    return ranges;
  }

  // A vectorised loop of a few elements (a channel block of NCHW[x]c: 4 to 64 lanes) runs as
  // one vector of its extent. Left to LLVM, such a loop is fully unrolled before the loop
  // vectoriser sees it, which then vectorises the loop around it instead, a gather and a
  // scatter per access (PP-OCRv4's blocked HardSwish: 4.2 ms for 3.3 M elements).
  static Stmt OneVectorWide(const Stmt& loop) {
    auto* f = static_cast<const ForNode*>(loop.get());
    constexpr int64_t kMinLanes = 4, kMaxLanes = 64;
    const int64_t e = f->extent;
    if (e < kMinLanes || e > kMaxLanes || (e & (e - 1)) != 0) return loop;
    auto one = std::make_shared<ForNode>(*f);
    one->vector_lanes = static_cast<int>(e);
    return Stmt(one);
  }

  // The loops over the stage's first `axes` output axes (all: -1) around `s`, each over its
  // range (unit extents dropped), the innermost vectorised when asked, the outermost parallel
  // when the work is worth it.
  Stmt SpatialLoops(const TensorNode* t, Stmt s, const std::vector<AxisRange>& ranges,
                    bool vectorize, int64_t work, int axes = -1) {
    const int n = axes < 0 ? static_cast<int>(t->axis.size()) : axes;
    std::vector<int> kept;
    for (int d = 0; d < n; ++d) {
      const Expr& var = t->axis[d].var;
      if (ranges[d].extent == 1) {
        s = SubstituteVar(s, var, Expr(ranges[d].begin));
      } else {
        if (ranges[d].begin != 0) s = SubstituteVar(s, var, var + ranges[d].begin);
        kept.push_back(d);
      }
    }
    for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
      const int d = kept[k];
      ForKind kind = ForKind::kSerial;
      if (k == static_cast<int>(kept.size()) - 1 && vectorize) kind = ForKind::kVectorized;
      if (k == 0 && opts_.parallel && work >= opts_.parallel_min_work) kind = ForKind::kParallel;
      Stmt loop = For(t->axis[d].var, ranges[d].extent, kind, s);
      if (kind == ForKind::kVectorized) loop = OneVectorWide(loop);
      s = loop;
    }
    return s;
  }

  // A select in v decided by an output axis against a constant (Concat's `i < offset`): *axis
  // and *at, the first index along it that takes the false arm.
  bool FindAxisSelect(const TensorNode* t, const Expr& v, const te::SelectNode** sel, int* axis,
                      int64_t* at) {
    if (!v.defined()) return false;
    switch (v.kind()) {
      case ExprKind::kSelect: {
        auto* node = v.as<te::SelectNode>();
        auto* cmp =
            node->cond.kind() == ExprKind::kBinary ? node->cond.as<te::BinaryNode>() : nullptr;
        int64_t bound = 0, offset = 0, coeff = 0;
        if (cmp != nullptr && cmp->op == te::BinaryOp::kLT && te::GetConstInt(cmp->b, &bound)) {
          for (size_t d = 0; d < t->axis.size(); ++d) {
            const Expr& var = t->axis[d].var;
            if (LinearCoeff(cmp->a, var.get(), &coeff) && coeff == 1 &&
                te::GetConstInt(Substitute(cmp->a, {{var.get(), Expr(0)}}), &offset)) {
              *sel = node;
              *axis = static_cast<int>(d);
              *at = bound - offset;
              return true;
            }
          }
        }
        return FindAxisSelect(t, node->true_value, sel, axis, at) ||
               FindAxisSelect(t, node->false_value, sel, axis, at);
      }
      case ExprKind::kBinary: {
        auto* b = v.as<te::BinaryNode>();
        return FindAxisSelect(t, b->a, sel, axis, at) || FindAxisSelect(t, b->b, sel, axis, at);
      }
      case ExprKind::kCast:
        return FindAxisSelect(t, v.as<te::CastNode>()->value, sel, axis, at);
      case ExprKind::kCall:
        for (const Expr& a : v.as<te::CallNode>()->args) {
          if (FindAxisSelect(t, a, sel, axis, at)) return true;
        }
        return false;
      default:
        return false;
    }
  }

  // The stage's nest storing v, split where a select compares an output axis with a constant
  // (a fused Concat): each part stores only its arm, so no part evaluates the other arm, whose
  // loads codegen would clamp into gathers.
  Stmt PartitionedNest(const TensorNode* t, const Buffer& out, const Expr& flat, const Expr& v,
                       const std::vector<AxisRange>& ranges, int64_t work) {
    const te::SelectNode* sel = nullptr;
    int axis = 0;
    int64_t at = 0;
    if (!FindAxisSelect(t, v, &sel, &axis, &at)) {
      return SpatialLoops(t, Store(out, flat, v), ranges, /*vectorize=*/true, work);
    }
    const AxisRange r = ranges[axis];
    auto part = [&](const Expr& arm, AxisRange range) {
      Rewriter rw;
      rw.nodes[sel] = arm;
      std::vector<AxisRange> sub = ranges;
      sub[axis] = range;
      return PartitionedNest(t, out, flat, rw.Visit(v), sub, work / r.extent * range.extent);
    };
    if (at <= r.begin) return part(sel->false_value, r);
    if (at >= r.begin + r.extent) return part(sel->true_value, r);
    return Seq({part(sel->true_value, {r.begin, at - r.begin}),
                part(sel->false_value, {at, r.begin + r.extent - at})});
  }

  // Reduction with the innermost output axis inside the reduction loops: a row of accumulators
  // is updated per reduction step, so the inner loop runs over contiguous outputs and vectorises
  // (conv: over output width; matmul: over output columns). Returns null when the source's loads
  // are not affine with a small stride along that axis.
  Stmt LowerReduceRowwise(const TensorNode* t, const te::ReduceNode* r, const Expr& src,
                          const Expr& cond, const Buffer& out, int64_t work) {
    constexpr int64_t kMinRow = 4;
    constexpr int64_t kMaxRow = 1024;
    constexpr int64_t kMaxStride = 2;
    if (r->op == te::ReduceOp::kArgMax || r->op == te::ReduceOp::kArgMin) return nullptr;
    int n = static_cast<int>(t->axis.size());
    if (n == 0) return nullptr;
    const IterVarRef inner{t->axis[n - 1].var, t->axis[n - 1].extent};
    if (inner.extent < kMinRow || inner.extent > kMaxRow) return nullptr;
    if (!LoadsVectorFriendly(src, inner.var.get(), kMaxStride)) return nullptr;
    if (cond.defined() && !LoadsVectorFriendly(cond, inner.var.get(), kMaxStride)) return nullptr;
    te::DataType st = src.dtype();
    Buffer acc = NewLocal(t->name + "_row", st, inner.extent);
    Expr accv = BufferLoad(acc, inner.var);
    Expr init_v, combined;
    if (!ReduceCombiner(r->op, st, accv, src, &init_v, &combined)) return nullptr;
    if (cond.defined()) combined = te::Select(cond, combined, accv);
    std::vector<Expr> idx;
    for (auto& a : t->axis) idx.push_back(a.var);
    Expr flat = Flatten(t->shape, idx);
    Stmt init = For(inner.var, inner.extent, ForKind::kVectorized, Store(acc, inner.var, init_v));
    Stmt red = For(inner.var, inner.extent, ForKind::kVectorized, Store(acc, inner.var, combined));
    for (int i = static_cast<int>(r->axes.size()) - 1; i >= 0; --i) {
      const auto& ax = r->axes[i];
      if (ax.extent == 1) {
        red = SubstituteVar(red, ax.var, 0);
        continue;
      }
      red = For(ax.var, ax.extent, ForKind::kSerial, red);
    }
    Stmt store = For(inner.var, inner.extent, ForKind::kVectorized,
                     Store(out, flat, te::Cast(out->dtype, accv)));
    // The innermost output axis is the rows' loop; the others go around them.
    return SpatialLoops(t, Seq({init, red, store}), FullRanges(t), /*vectorize=*/false, work,
                        n - 1);
  }

  // A reduction of many elements to one value (a tensor's min, max or sum: the range
  // DynamicQuantizeLinear computes of every activation). The innermost reduction axis becomes a
  // row of accumulators updated by a vector loop, as in LowerReduceRowwise (one serial
  // accumulator would chain every element through one register); the outermost axis of more
  // than one step is split into tasks, each leaving its row's combination in a partials
  // workspace, combined last. Returns null where that does not apply (arg reductions, an
  // innermost axis too short or too long for a row, loads that are not contiguous along it).
  Stmt LowerReduceToOne(const TensorNode* t, const te::ReduceNode* r, const Expr& src,
                        const Expr& cond, const Buffer& out, int64_t work) {
    constexpr int64_t kMinRow = 8;
    constexpr int64_t kMaxRow = 1024;
    constexpr int64_t kMinElements = 4096;
    if (r->op == te::ReduceOp::kArgMax || r->op == te::ReduceOp::kArgMin) return nullptr;
    std::vector<const te::IterVar*> axes;
    for (const auto& ax : r->axes) {
      if (ax.extent > 1) axes.push_back(&ax);
    }
    if (axes.size() < 2 || work < kMinElements) return nullptr;
    const te::IterVar& inner = *axes.back();
    const te::IterVar& split = *axes.front();
    if (inner.extent < kMinRow || inner.extent > kMaxRow) return nullptr;
    if (!LoadsVectorFriendly(src, inner.var.get(), 1)) return nullptr;
    if (cond.defined() && !LoadsVectorFriendly(cond, inner.var.get(), 1)) return nullptr;
    const te::DataType st = src.dtype();
    Buffer row = NewLocal(t->name + "_row", st, inner.extent);
    Buffer acc = NewLocal(t->name + "_acc", st);
    Buffer parts = NewBuffer(t->name + "_parts_ws", st, split.extent, BufferScope::kWorkspace);
    func_.workspaces.push_back(parts);
    Expr init_v, step;
    ReduceCombiner(r->op, st, BufferLoad(row, inner.var), src, &init_v, &step);
    if (cond.defined()) step = te::Select(cond, step, BufferLoad(row, inner.var));
    // One task: its row from the identity over its slice, then the row combined into parts[p].
    Stmt update = For(inner.var, inner.extent, ForKind::kVectorized, Store(row, inner.var, step));
    for (size_t i = axes.size() - 1; i-- > 1;) {
      update = For(axes[i]->var, axes[i]->extent, ForKind::kSerial, update);
    }
    Expr row_fold, parts_fold, unused;
    ReduceCombiner(r->op, st, BufferLoad(acc, 0), BufferLoad(row, inner.var), &unused, &row_fold);
    ReduceCombiner(r->op, st, BufferLoad(acc, 0), BufferLoad(parts, split.var), &unused,
                   &parts_fold);
    Stmt task =
        Seq({For(inner.var, inner.extent, ForKind::kVectorized, Store(row, inner.var, init_v)),
             update, Store(acc, 0, init_v),
             For(inner.var, inner.extent, ForKind::kSerial, Store(acc, 0, row_fold)),
             Store(parts, split.var, BufferLoad(acc, 0))});
    const bool par = opts_.parallel && work >= opts_.parallel_min_work;
    std::vector<Stmt> seq{
        For(split.var, split.extent, par ? ForKind::kParallel : ForKind::kSerial, task),
        Store(acc, 0, init_v),
        For(split.var, split.extent, ForKind::kSerial, Store(acc, 0, parts_fold)),
        Store(out, 0, te::Cast(out->dtype, BufferLoad(acc, 0)))};
    Stmt s = Seq(seq);
    for (const auto& a : r->axes) {
      if (a.extent == 1) s = SubstituteVar(s, a.var, 0);
    }
    for (const auto& a : t->axis) s = SubstituteVar(s, a.var, 0);
    return s;
  }

  ScheduleOptions opts_;
  LoweredFunc func_;
  std::unordered_map<const TensorNode*, Buffer> buffers_;
  std::unordered_map<const TensorNode*, Expr> inline_cache_;
  std::vector<Buffer> out_buffers_;
};

}  // namespace

Expr Substitute(const Expr& e, const VarMap& vars) {
  Rewriter rw;
  rw.vars = vars;
  return rw.Visit(e);
}

Stmt MapExprs(const Stmt& s, const std::function<Expr(const Expr&)>& fn) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto loop = std::make_shared<ForNode>(*static_cast<const ForNode*>(s.get()));
      if (loop->limit.defined()) loop->limit = fn(loop->limit);
      loop->body = MapExprs(loop->body, fn);
      return loop;
    }
    case StmtKind::kStore: {
      auto* p = static_cast<const StoreNode*>(s.get());
      return Store(p->buffer, fn(p->index), fn(p->value));
    }
    case StmtKind::kPrefetch: {
      auto* p = static_cast<const PrefetchNode*>(s.get());
      return Prefetch(p->buffer, fn(p->index));
    }
    case StmtKind::kIndexCheck:
      return s;
    case StmtKind::kIf: {
      auto* p = static_cast<const IfNode*>(s.get());
      return If(fn(p->cond), MapExprs(p->then_case, fn), MapExprs(p->else_case, fn));
    }
    case StmtKind::kSeq: {
      auto* p = static_cast<const SeqNode*>(s.get());
      std::vector<Stmt> stmts;
      for (const Stmt& x : p->stmts) stmts.push_back(MapExprs(x, fn));
      return Seq(stmts);
    }
  }
  return s;
}

Stmt SubstituteStmt(const Stmt& s, const VarMap& vars) {
  return MapExprs(s, [&vars](const Expr& e) { return Substitute(e, vars); });
}

Stmt SubstituteVar(const Stmt& s, const Expr& var, const Expr& value) {
  return SubstituteStmt(s, VarMap{{var.get(), value}});
}

LoweredFunc LowerTensors(const std::string& name, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& outputs, const std::vector<ArgInfo>& arg_infos,
                         const ScheduleOptions& opts) {
  Lowerer l(name, opts);
  return l.Run(inputs, outputs, arg_infos);
}

namespace {

// Whether `indices` is a constant whose elements (those r covers) all lie in r's range: then
// no run-time check is needed, and leaving it out keeps the kernel free of the node's name, so
// that the steps of an unrolled recurrence (each slicing its gates with constant ranges) share
// one compiled kernel.
bool ConstantWithin(const Value& indices, const RunTimeIndexRange& r) {
  if (!indices.is_constant()) return false;
  const int64_t low = r.non_negative ? 0 : -r.extent;
  for (int64_t i = r.first; i < indices.constant->NumElements(); i += r.step) {
    const int64_t k = indices.constant->GetAsInt(i);
    if (k < low || k >= r.extent) return false;
  }
  return true;
}

// Run-time positions arriving as an argument: the compute rule clamps them to stay in bounds,
// and the function refuses them first so the clamp never hides a bad one.
std::vector<IndexCheck> RunTimeIndexChecks(const FusedGroup& group) {
  const Graph& g = *group.graph;
  std::vector<IndexCheck> checks;
  for (const Node* node : group.nodes) {
    const OpDef* def = OpRegistry::Global()->Find(node->op);
    if (def == nullptr || !def->runtime_indices()) continue;
    const Value& indices = g.value(node->inputs.at(1));
    std::vector<TensorType> types;
    for (int in : node->inputs)
      types.push_back(in == kAbsentValue ? TensorType{} : g.value(in).type);
    auto arg = std::find(group.inputs.begin(), group.inputs.end(), node->inputs.at(1));
    for (const RunTimeIndexRange& r : def->runtime_indices()(*node, types)) {
      if (ConstantWithin(indices, r)) continue;
      if (arg == group.inputs.end()) {  // FuseOps keeps such producers apart (one place decides)
        throw CompileError(node->Describe() + ": its indices '" + indices.name +
                           "' are computed inside kernel " + group.func_name +
                           ", where they cannot be checked before it runs");
      }
      checks.push_back(IndexCheck{static_cast<int>(arg - group.inputs.begin()), r.extent,
                                  ops::RunTimeIndexMessage(*node, r, g.value(*arg).name), r.first,
                                  r.step, r.non_negative});
    }
  }
  return checks;
}

// A group of one node whose op writes its own loop nest (OpDef::loop_kernel): the group's
// arguments, the node's inputs and outputs as their buffers (an output no other kernel reads, such
// as TopK's unused indices, in workspace memory), and the op's body.
LoweredFunc LowerLoopKernel(const FusedGroup& group, const Node& node, const FLoopKernel& rule) {
  const Graph& g = *group.graph;
  LoweredFunc f;
  f.name = group.func_name;
  std::map<int, Buffer> arg_of;
  auto add_arg = [&](int vid) {
    const Value& v = g.value(vid);
    ArgInfo a{v.name, v.type.shape, v.type.dtype, nullptr};
    a.buffer = NewArgBuffer(a, static_cast<int>(f.args.size()));
    arg_of[vid] = a.buffer;
    f.args.push_back(a);
  };
  for (int vid : group.inputs) add_arg(vid);
  for (int vid : group.outputs) add_arg(vid);
  std::vector<Buffer> inputs, outputs;
  for (int vid : node.inputs) {
    if (vid == kAbsentValue) {
      inputs.push_back(nullptr);
    } else if (arg_of.count(vid) != 0) {
      inputs.push_back(arg_of[vid]);
    } else {
      throw CompileError(node.Describe() + ": input '" + g.value(vid).name +
                         "' is not an argument of its kernel " + group.func_name);
    }
  }
  for (int vid : node.outputs) {
    if (arg_of.count(vid) == 0) {
      const Value& v = g.value(vid);
      f.workspaces.push_back(NewBuffer(v.name, ops::ExprType(v.type.dtype), v.type.NumElements(),
                                       BufferScope::kWorkspace));
      arg_of[vid] = f.workspaces.back();
    }
    outputs.push_back(arg_of[vid]);
  }
  f.body = rule(node, inputs, outputs, &f);
  return f;
}

}  // namespace

LoweredFunc LowerGroup(const FusedGroup& group, const ScheduleOptions& opts) {
  LoweredFunc scheduled;
  if (opts.scheduler != nullptr && opts.scheduler->Schedule(group, opts, &scheduled)) {
    return scheduled;
  }
  if (group.nodes.size() == 1) {
    const OpDef* def = OpRegistry::Global()->Find(group.nodes[0]->op);
    if (def != nullptr && def->loop_kernel()) {
      ops::GraphScope scope(group.graph);
      return LowerLoopKernel(group, *group.nodes[0], def->loop_kernel());
    }
  }
  const Graph& g = *group.graph;
  ops::GraphScope scope(&g);
  std::map<int, Tensor> env;
  std::vector<Tensor> inputs, outputs;
  std::vector<ArgInfo> args;
  for (int vid : group.inputs) {
    const Value& v = g.value(vid);
    Tensor t = te::Placeholder(v.type.shape, ops::ExprType(v.type.dtype), v.name);
    env[vid] = t;
    inputs.push_back(t);
    args.push_back(ArgInfo{v.name, v.type.shape, v.type.dtype, nullptr});
  }
  for (const Node* node : group.nodes) {
    const OpDef* def = OpRegistry::Global()->Find(node->op);
    if (def == nullptr || !def->has_compute()) {
      throw UnsupportedError(node->Describe() + ": operator " + node->op +
                             " has no kernel (compute rule) in emberc");
    }
    std::vector<Tensor> ins;
    std::vector<TensorType> out_types;
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      int vid = node->inputs[i];
      if (vid == kAbsentValue) {
        ins.push_back(Tensor());
        continue;
      }
      auto it = env.find(vid);
      if (it != env.end()) {
        ins.push_back(it->second);
      } else if (g.value(vid).is_constant()) {
        // Constant operands the graph side kept off the argument list (shape/axes inputs) are
        // read by compute rules through ConstInput; expose small ones as tensors too.
        const Value& v = g.value(vid);
        if (v.constant->NumElements() <= 256) {
          ins.push_back(ops::ConstTensor(*v.constant, v.name));
        } else {
          ins.push_back(Tensor());
        }
      } else {
        throw CompileError(node->Describe() + ": input '" + g.value(vid).name +
                           "' is neither a group input nor produced inside group " +
                           group.func_name);
      }
    }
    for (int o : node->outputs) out_types.push_back(g.value(o).type);
    std::vector<Tensor> res = def->compute()(*node, ins, out_types);
    if (res.size() < node->outputs.size()) {
      throw CompileError(node->Describe() + ": compute rule made " + std::to_string(res.size()) +
                         " outputs, the node has " + std::to_string(node->outputs.size()));
    }
    for (size_t k = 0; k < node->outputs.size(); ++k) {
      const TensorType& tt = out_types[k];
      if (res[k].shape() != tt.shape) {
        throw CompileError(node->Describe() + ": kernel output " + std::to_string(k) + " shape " +
                           ShapeToString(res[k].shape()) + " differs from the graph's " +
                           ShapeToString(tt.shape));
      }
      Tensor r = res[k];
      if (r.dtype() != ops::ExprType(tt.dtype)) {
        r = te::Compute(
            r.shape(),
            [&](const std::vector<Expr>& idx) { return te::Cast(ops::ExprType(tt.dtype), r(idx)); },
            r->name + "_cast");
      }
      if (group.nodes.size() > 1 && tt.dtype.code == kDLFloat && tt.dtype.bits == 16) {
        // float16 arithmetic runs in float; a node's result is float16 all the same, as it would
        // be in memory between two kernels (ONNX Runtime rounds there too).
        const te::DataType f32 = te::Float(32);
        r = te::Compute(
            r.shape(),
            [&](const std::vector<Expr>& idx) {
              return te::Cast(r.dtype(), te::Cast(f32, r(idx)));
            },
            r->name + "_fp16");
      }
      env[node->outputs[k]] = r;
    }
  }
  for (int vid : group.outputs) {
    const Value& v = g.value(vid);
    auto it = env.find(vid);
    if (it == env.end()) {
      throw CompileError("group " + group.func_name + ": output '" + v.name + "' is not computed");
    }
    outputs.push_back(it->second);
    args.push_back(ArgInfo{v.name, v.type.shape, v.type.dtype, nullptr});
  }
  LoweredFunc f = LowerTensors(group.func_name, inputs, outputs, args, opts);
  f.index_checks = RunTimeIndexChecks(group);
  return f;
}

}  // namespace ember::compiler::lower
