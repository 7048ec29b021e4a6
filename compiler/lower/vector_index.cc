// Index arithmetic of vectorised loops rewritten so that LLVM sees unit strides.
//
// A vectorised loop over v in [0, E) whose loads index `(r + v) mod k` or `(r + v) / k` (an
// element's channel inside a block of NCHW[x]c, say, with r a multiple of the vector's width)
// reads E consecutive elements, but LLVM's vectoriser cannot see through the division and emits
// a gather (a load, an insert and the whole index computation per lane). When every value of r is
// a multiple of some m >= E that divides k, r + v never crosses a multiple of k, so
// (r + v) mod k = (r mod k) + v and (r + v) / k = r / k: the index becomes affine in v with
// coefficient 1 and the loop one vector load.
#include <numeric>

#include "ember/compiler/lower.h"
#include "expr_mutator.h"

namespace ember::compiler::lower {
namespace {

using te::BinaryOp;
using te::Expr;
using te::ExprKind;

// A number every value of e is a multiple of (1 when nothing is known; 0 for the constant 0,
// a multiple of everything).
int64_t KnownDivisor(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      const int64_t v = e.as<te::IntImmNode>()->value;
      return v < 0 ? -v : v;
    }
    case ExprKind::kCast:
      return te::IsFloat(e.dtype()) ? 1 : KnownDivisor(e.as<te::CastNode>()->value);
    case ExprKind::kBinary: {
      auto* b = e.as<te::BinaryNode>();
      int64_t k = 0;
      switch (b->op) {
        case BinaryOp::kAdd:
        case BinaryOp::kSub:
        case BinaryOp::kMin:
        case BinaryOp::kMax:
          return std::gcd(KnownDivisor(b->a), KnownDivisor(b->b));
        case BinaryOp::kMul: {
          const int64_t da = KnownDivisor(b->a), db = KnownDivisor(b->b);
          if (da == 0 || db == 0) return 0;
          return da <= (int64_t{1} << 31) && db <= (int64_t{1} << 31) ? da * db : 1;
        }
        case BinaryOp::kMod:
        case BinaryOp::kFloorMod:
          // a mod k = a - k * q: a multiple of what divides both a and k.
          return te::GetConstInt(b->b, &k) && k > 0 ? std::gcd(KnownDivisor(b->a), k) : 1;
        default:
          return 1;
      }
    }
    default:
      return 1;
  }
}

// Whether every value of e is >= 0: loop variables are, and so are sums, products, minima,
// maxima, quotients and remainders of such by positive constants.
bool NonNegative(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm:
      return e.as<te::IntImmNode>()->value >= 0;
    case ExprKind::kVar:
      return true;
    case ExprKind::kBinary: {
      auto* b = e.as<te::BinaryNode>();
      int64_t k = 0;
      switch (b->op) {
        case BinaryOp::kAdd:
        case BinaryOp::kMul:
        case BinaryOp::kMin:
        case BinaryOp::kMax:
          return NonNegative(b->a) && NonNegative(b->b);
        case BinaryOp::kDiv:
        case BinaryOp::kMod:
        case BinaryOp::kFloorDiv:
        case BinaryOp::kFloorMod:
          return te::GetConstInt(b->b, &k) && k > 0 && NonNegative(b->a);
        default:
          return false;
      }
    }
    default:
      return false;
  }
}

// e with every (r + v) mod k and (r + v) / k that allows it rewritten (see the file comment), v
// being in [0, extent). Subexpressions without v are kept as they are, shared nodes included.
class UnitStride : public ExprMutator {
 public:
  UnitStride(Expr var, int64_t extent) : var_(std::move(var)), extent_(extent) {}

  Expr Visit(const Expr& e) override {
    return e.defined() && Occurs(e, var_.get()) ? ExprMutator::Visit(e) : e;
  }

 protected:
  Expr VisitBinary(const te::BinaryNode* b, Expr a, Expr c) override {
    Expr split = Divided(b->op, a, c);
    return split.defined() ? split : te::Binary(b->op, a, c);
  }

 private:
  // (r + v) op k without v inside the division, or undefined when that is not exact.
  Expr Divided(BinaryOp op, const Expr& a, const Expr& k_expr) const {
    const bool floor = op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod;
    const bool mod = op == BinaryOp::kMod || op == BinaryOp::kFloorMod;
    if (!floor && op != BinaryOp::kDiv && op != BinaryOp::kMod) return Expr();
    int64_t k = 0, coeff = 0;
    if (!te::GetConstInt(k_expr, &k) || k <= 0) return Expr();
    if (!LinearCoeff(a, var_.get(), &coeff) || coeff != 1) return Expr();
    Expr r = Substitute(a, {{var_.get(), Expr(0)}});
    const int64_t d = KnownDivisor(r);
    const int64_t step = d == 0 ? k : std::gcd(d, k);  // r mod k is a multiple of it
    // Truncating division is floor division only where r >= 0.
    if (step < extent_ || (!floor && !NonNegative(r))) return Expr();
    return mod ? te::Binary(op, r, k_expr) + var_ : te::Binary(op, r, k_expr);
  }

  Expr var_;
  int64_t extent_;
};

}  // namespace

Stmt UnitStrideVectorIndices(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
    case StmtKind::kFor: {
      auto loop = std::make_shared<ForNode>(*static_cast<const ForNode*>(s.get()));
      loop->body = UnitStrideVectorIndices(loop->body);
      if (loop->for_kind == ForKind::kVectorized) {
        UnitStride rw(loop->var, loop->extent);
        loop->body = MapExprs(loop->body, [&rw](const Expr& e) { return rw.Visit(e); });
      }
      return loop;
    }
    case StmtKind::kIf: {
      auto* p = static_cast<const IfNode*>(s.get());
      return If(p->cond, UnitStrideVectorIndices(p->then_case),
                UnitStrideVectorIndices(p->else_case));
    }
    case StmtKind::kSeq: {
      auto* p = static_cast<const SeqNode*>(s.get());
      std::vector<Stmt> stmts;
      for (const Stmt& x : p->stmts) stmts.push_back(UnitStrideVectorIndices(x));
      return Seq(stmts);
    }
    default:
      return s;
  }
}

}  // namespace ember::compiler::lower
