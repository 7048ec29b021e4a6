// CollectFreeVars: what a parallel loop's body reads from outside it, so code generation can
// pass exactly that to the closure the loop becomes.
#include <set>

#include "ember/compiler/lower.h"

namespace ember::compiler::lower {
namespace {

using te::Expr;
using te::ExprKind;

struct FreeCollector {
  std::set<const te::ExprNode*> bound;
  std::vector<const te::ExprNode*> vars;
  std::set<const te::ExprNode*> var_seen;
  std::vector<const BufferNode*> buffers;
  std::set<const BufferNode*> buf_seen;

  void Buf(const BufferNode* b) {
    if (b->scope == BufferScope::kLocal) return;
    if (buf_seen.insert(b).second) buffers.push_back(b);
  }
  void E(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::kVar:
        if (!bound.count(e.get()) && var_seen.insert(e.get()).second) vars.push_back(e.get());
        break;
      case ExprKind::kBinary:
        E(e.as<te::BinaryNode>()->a);
        E(e.as<te::BinaryNode>()->b);
        break;
      case ExprKind::kNot:
        E(e.as<te::NotNode>()->a);
        break;
      case ExprKind::kSelect: {
        auto* s = e.as<te::SelectNode>();
        E(s->cond);
        E(s->true_value);
        E(s->false_value);
        break;
      }
      case ExprKind::kCast:
        E(e.as<te::CastNode>()->value);
        break;
      case ExprKind::kCall:
        for (auto& a : e.as<te::CallNode>()->args) E(a);
        break;
      case ExprKind::kBufferLoad: {
        auto* l = e.as<BufferLoadNode>();
        Buf(l->buffer.get());
        E(l->index);
        break;
      }
      default:
        break;
    }
  }
  void S(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        auto* f = static_cast<const ForNode*>(s.get());
        if (f->limit.defined()) E(f->limit);
        bound.insert(f->var.get());
        S(f->body);
        break;
      }
      case StmtKind::kStore: {
        auto* p = static_cast<const StoreNode*>(s.get());
        Buf(p->buffer.get());
        E(p->index);
        E(p->value);
        break;
      }
      case StmtKind::kPrefetch: {
        auto* p = static_cast<const PrefetchNode*>(s.get());
        Buf(p->buffer.get());
        E(p->index);
        break;
      }
      case StmtKind::kIndexCheck:
        Buf(static_cast<const IndexCheckNode*>(s.get())->buffer.get());
        break;
      case StmtKind::kIf: {
        auto* p = static_cast<const IfNode*>(s.get());
        E(p->cond);
        S(p->then_case);
        S(p->else_case);
        break;
      }
      case StmtKind::kSeq:
        for (auto& x : static_cast<const SeqNode*>(s.get())->stmts) S(x);
        break;
    }
  }
};

}  // namespace

FreeVars CollectFreeVars(const ForNode& loop) {
  FreeCollector fc;
  fc.bound.insert(loop.var.get());
  fc.S(loop.body);
  return FreeVars{std::move(fc.vars), std::move(fc.buffers)};
}

}  // namespace ember::compiler::lower
