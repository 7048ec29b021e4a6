// ExprMutator: rebuilds an expression bottom-up, node by node, so a pass that changes a few kinds
// of node overrides those and inherits the walk over the rest.
#pragma once

#include <vector>

#include "ember/compiler/lower.h"

namespace ember::compiler::lower {

class ExprMutator {
 public:
  virtual ~ExprMutator() = default;

  // e with its operands rewritten first; constants are kept, a reduction is refused (lowering
  // only meets one as the whole body of a compute).
  virtual te::Expr Visit(const te::Expr& e);

 protected:
  virtual te::Expr VisitVar(const te::Expr& var) { return var; }
  // The node `b` rebuilt from its operands, already rewritten.
  virtual te::Expr VisitBinary(const te::BinaryNode* b, te::Expr a, te::Expr c) {
    return te::Binary(b->op, std::move(a), std::move(c));
  }
  virtual te::Expr VisitTensorLoad(const te::TensorLoadNode* l, std::vector<te::Expr> indices) {
    return l->tensor(indices);
  }
  virtual te::Expr VisitBufferLoad(const BufferLoadNode* l, te::Expr index) {
    return te::Expr(std::make_shared<BufferLoadNode>(l->dtype, l->buffer, std::move(index)));
  }
};

}  // namespace ember::compiler::lower
