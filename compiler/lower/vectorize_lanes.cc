// Loop-IR expression analysis (occurrence, affine index coefficients) and the lane vectoriser
// schedules use to turn a per-element expression into one over `lanes` consecutive elements.
#include <functional>
#include <stdexcept>

#include "ember/compiler/lower.h"

namespace ember::compiler::lower {

using te::Expr;
using te::ExprKind;

bool Occurs(const Expr& e, const te::ExprNode* var) {
  if (!e.defined()) return false;
  switch (e.kind()) {
    case ExprKind::kVar:
      return e.get() == var;
    case ExprKind::kBinary: {
      auto* b = e.as<te::BinaryNode>();
      return Occurs(b->a, var) || Occurs(b->b, var);
    }
    case ExprKind::kNot:
      return Occurs(e.as<te::NotNode>()->a, var);
    case ExprKind::kSelect: {
      auto* s = e.as<te::SelectNode>();
      return Occurs(s->cond, var) || Occurs(s->true_value, var) || Occurs(s->false_value, var);
    }
    case ExprKind::kCast:
      return Occurs(e.as<te::CastNode>()->value, var);
    case ExprKind::kCall:
      for (auto& a : e.as<te::CallNode>()->args) {
        if (Occurs(a, var)) return true;
      }
      return false;
    case ExprKind::kBufferLoad:
      return Occurs(e.as<BufferLoadNode>()->index, var);
    default:
      return false;
  }
}

bool LinearCoeff(const Expr& e, const te::ExprNode* var, int64_t* c) {
  if (!Occurs(e, var)) {
    *c = 0;
    return true;
  }
  switch (e.kind()) {
    case ExprKind::kVar:
      *c = 1;
      return true;
    case ExprKind::kCast:
      return LinearCoeff(e.as<te::CastNode>()->value, var, c);
    case ExprKind::kBinary: {
      auto* b = e.as<te::BinaryNode>();
      int64_t ca, cb;
      if (!LinearCoeff(b->a, var, &ca) || !LinearCoeff(b->b, var, &cb)) return false;
      int64_t k;
      switch (b->op) {
        case te::BinaryOp::kAdd:
          *c = ca + cb;
          return true;
        case te::BinaryOp::kSub:
          *c = ca - cb;
          return true;
        case te::BinaryOp::kMul:
          if (cb == 0 && te::GetConstInt(b->b, &k)) {
            *c = ca * k;
            return true;
          }
          if (ca == 0 && te::GetConstInt(b->a, &k)) {
            *c = cb * k;
            return true;
          }
          return false;
        default:
          return false;
      }
    }
    default:
      return false;
  }
}

void VisitLoads(const Expr& e, const std::function<void(const BufferLoadNode*)>& fn) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::kBufferLoad:
      fn(e.as<BufferLoadNode>());
      VisitLoads(e.as<BufferLoadNode>()->index, fn);
      return;
    case ExprKind::kBinary:
      VisitLoads(e.as<te::BinaryNode>()->a, fn);
      VisitLoads(e.as<te::BinaryNode>()->b, fn);
      return;
    case ExprKind::kNot:
      VisitLoads(e.as<te::NotNode>()->a, fn);
      return;
    case ExprKind::kSelect: {
      auto* s = e.as<te::SelectNode>();
      VisitLoads(s->cond, fn);
      VisitLoads(s->true_value, fn);
      VisitLoads(s->false_value, fn);
      return;
    }
    case ExprKind::kCast:
      VisitLoads(e.as<te::CastNode>()->value, fn);
      return;
    case ExprKind::kCall:
      for (const Expr& a : e.as<te::CallNode>()->args) VisitLoads(a, fn);
      return;
    default:
      return;
  }
}

namespace {

// Lane k of the result is e with var = base + k (see VectorizeLanes); undefined when e has a part
// that cannot be vectorised.
class LaneVectorizer {
 public:
  LaneVectorizer(const te::ExprNode* var, Expr base, int lanes)
      : var_(var), base_(std::move(base)), lanes_(lanes) {}

  Expr Visit(const Expr& e) {
    if (!e.defined()) return e;
    switch (e.kind()) {
      case ExprKind::kIntImm:
      case ExprKind::kFloatImm:
        return e;
      case ExprKind::kVar:
        return e.get() == var_ ? Expr() : e;  // var as a value would need a lane ramp
      case ExprKind::kBufferLoad:
        return Load(e, e.as<BufferLoadNode>());
      case ExprKind::kCall:
        return Call(e);
      case ExprKind::kBinary: {
        auto* b = e.as<te::BinaryNode>();
        Expr x = Visit(b->a), y = Visit(b->b);
        if (!x.defined() || !y.defined()) return Expr();
        return te::Binary(b->op, x, y);  // broadcasts a scalar side
      }
      case ExprKind::kNot: {
        Expr x = Visit(e.as<te::NotNode>()->a);
        return x.defined() ? te::Not(x) : Expr();
      }
      case ExprKind::kSelect: {
        auto* s = e.as<te::SelectNode>();
        Expr c = Visit(s->cond), t = Visit(s->true_value), f = Visit(s->false_value);
        if (!c.defined() || !t.defined() || !f.defined()) return Expr();
        if (c.dtype().lanes == 1 && t.dtype().lanes == 1 && f.dtype().lanes == 1) {
          return te::Select(c, t, f);
        }
        return te::Select(Widen(c), Widen(t), Widen(f));
      }
      case ExprKind::kCast: {
        // Also a te::Broadcast of a lane-dependent scalar: lane k is that scalar at base + k.
        Expr x = Visit(e.as<te::CastNode>()->value);
        if (!x.defined()) return Expr();
        return te::Cast(te::WithLanes(e.dtype(), x.dtype().lanes), x);
      }
      default:  // te nodes
        return Expr();
    }
  }

 private:
  // A call whose arguments are the same in every lane (and are not vectors already, such as an
  // accumulator) is kept as it is. Otherwise only intrinsics codegen emits as LLVM intrinsics
  // vectorise: roundeven, floor, ceil, fabs and sqrt are one instruction on a vector, and exp,
  // log and sigmoid (float32) LLVM expands per lane with the same results, which keeps a conv's
  // Sigmoid epilogue in its blocked kernel. The rest (libm calls) are emitted on scalars.
  Expr Call(const Expr& e) {
    auto* c = e.as<te::CallNode>();
    bool uniform = true;
    for (const Expr& a : c->args) {
      uniform = uniform && !Occurs(a, var_) && a.dtype().lanes == 1 && !HasVectorLeaf(a);
    }
    if (uniform) return e;
    // A shuffle of vectors var does not reach (a register transpose's result) is, like an
    // accumulator's load, already the value of every lane.
    if (c->fn == te::Intrinsic::kShuffle && c->dtype.lanes == lanes_ && !Occurs(e, var_)) return e;
    if (!IsVectorIntrinsic(c->fn, c->dtype)) return Expr();
    std::vector<Expr> args;
    for (const Expr& a : c->args) {
      Expr v = Visit(a);
      if (!v.defined()) return Expr();
      args.push_back(Widen(v));
    }
    return Expr(std::make_shared<te::CallNode>(te::WithLanes(c->dtype, lanes_), c->fn, args));
  }
  static bool IsVectorIntrinsic(te::Intrinsic fn, te::DataType t) {
    using te::Intrinsic;
    if (!te::IsFloat(t)) return false;
    // Arithmetic in codegen for float32 (a libm call per lane where a kernel keeps exact libm).
    if (fn == Intrinsic::kExp || fn == Intrinsic::kLog || fn == Intrinsic::kSigmoid ||
        fn == Intrinsic::kTanh || fn == Intrinsic::kErf) {
      return t.bits == 32;
    }
    return fn == Intrinsic::kRound || fn == Intrinsic::kFloor || fn == Intrinsic::kCeil ||
           fn == Intrinsic::kFabs || fn == Intrinsic::kSqrt || fn == Intrinsic::kMaximum ||
           fn == Intrinsic::kMinimum;
  }
  static bool HasVectorLeaf(const Expr& e) {
    bool vector = false;
    VisitLoads(e, [&](const BufferLoadNode* l) { vector = vector || l->dtype.lanes != 1; });
    return vector;
  }
  // Loads that var does not reach (and vector leaves such as an accumulator) stay as they are.
  Expr Load(const Expr& e, const BufferLoadNode* l) {
    if (!Occurs(l->index, var_)) return e;
    int64_t c;
    if (l->dtype.lanes != 1 || !LinearCoeff(l->index, var_, &c) || c != 1) return Expr();
    return VectorLoad(l->buffer, Substitute(l->index, {{var_, base_}}), lanes_);
  }
  Expr Widen(const Expr& e) const {
    return e.dtype().lanes == 1 && lanes_ > 1 ? te::Broadcast(e, lanes_) : e;
  }

  const te::ExprNode* var_;
  Expr base_;
  int lanes_;
};

}  // namespace

Expr VectorizeLanes(const Expr& e, const te::ExprNode* var, const Expr& base, int lanes) {
  if (lanes == 1) return Substitute(e, {{var, base}});
  return LaneVectorizer(var, base, lanes).Visit(e);
}

}  // namespace ember::compiler::lower
