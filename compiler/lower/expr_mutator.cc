#include "expr_mutator.h"

#include <stdexcept>

namespace ember::compiler::lower {

using te::Expr;
using te::ExprKind;

Expr ExprMutator::Visit(const Expr& e) {
  if (!e.defined()) return e;
  switch (e.kind()) {
    case ExprKind::kIntImm:
    case ExprKind::kFloatImm:
      return e;
    case ExprKind::kVar:
      return VisitVar(e);
    case ExprKind::kBinary: {
      auto* b = e.as<te::BinaryNode>();
      return VisitBinary(b, Visit(b->a), Visit(b->b));
    }
    case ExprKind::kNot:
      return te::Not(Visit(e.as<te::NotNode>()->a));
    case ExprKind::kSelect: {
      auto* s = e.as<te::SelectNode>();
      return te::Select(Visit(s->cond), Visit(s->true_value), Visit(s->false_value));
    }
    case ExprKind::kCast:
      return te::Cast(e.dtype(), Visit(e.as<te::CastNode>()->value));
    case ExprKind::kCall: {
      auto* c = e.as<te::CallNode>();
      std::vector<Expr> args;
      for (const Expr& a : c->args) args.push_back(Visit(a));
      return Expr(std::make_shared<te::CallNode>(c->dtype, c->fn, std::move(args)));
    }
    case ExprKind::kTensorLoad: {
      auto* l = e.as<te::TensorLoadNode>();
      std::vector<Expr> indices;
      for (const Expr& i : l->indices) indices.push_back(Visit(i));
      return VisitTensorLoad(l, std::move(indices));
    }
    case ExprKind::kBufferLoad: {
      auto* l = e.as<BufferLoadNode>();
      return VisitBufferLoad(l, Visit(l->index));
    }
    case ExprKind::kReduce:
      throw std::runtime_error("lower: a reduction may only be the whole body of a compute");
  }
  return e;
}

}  // namespace ember::compiler::lower
