#include "ember/compiler/te/tensor.h"

#include <functional>
#include <set>
#include <stdexcept>

namespace ember::compiler::te {

int64_t Tensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : node_->shape) n *= d;
  return n;
}

Expr Tensor::operator()(const std::vector<Expr>& indices) const {
  if (indices.size() != node_->shape.size()) {
    throw std::runtime_error("te: tensor " + node_->name + " has " +
                             std::to_string(node_->shape.size()) + " dims, indexed with " +
                             std::to_string(indices.size()));
  }
  std::vector<Expr> idx = indices;
  for (auto& i : idx) {
    if (i.dtype() != Index()) i = Cast(Index(), i);
  }
  return Expr(std::make_shared<TensorLoadNode>(*this, std::move(idx)));
}

Tensor Placeholder(std::vector<int64_t> shape, DataType dtype, const std::string& name) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->shape = std::move(shape);
  n->dtype = dtype;
  return Tensor(n);
}

namespace {

// Collects the distinct tensors an expression reads.
void CollectInputs(const Expr& e, std::vector<std::shared_ptr<const TensorNode>>* out,
                   std::set<const TensorNode*>* seen) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::kBinary: {
      auto* b = e.as<BinaryNode>();
      CollectInputs(b->a, out, seen);
      CollectInputs(b->b, out, seen);
      break;
    }
    case ExprKind::kNot:
      CollectInputs(e.as<NotNode>()->a, out, seen);
      break;
    case ExprKind::kSelect: {
      auto* s = e.as<SelectNode>();
      CollectInputs(s->cond, out, seen);
      CollectInputs(s->true_value, out, seen);
      CollectInputs(s->false_value, out, seen);
      break;
    }
    case ExprKind::kCast:
      CollectInputs(e.as<CastNode>()->value, out, seen);
      break;
    case ExprKind::kCall:
      for (auto& a : e.as<CallNode>()->args) CollectInputs(a, out, seen);
      break;
    case ExprKind::kTensorLoad: {
      auto* l = e.as<TensorLoadNode>();
      if (seen->insert(l->tensor.get()).second) out->push_back(l->tensor.node());
      for (auto& i : l->indices) CollectInputs(i, out, seen);
      break;
    }
    case ExprKind::kReduce: {
      auto* r = e.as<ReduceNode>();
      CollectInputs(r->source, out, seen);
      CollectInputs(r->condition, out, seen);
      break;
    }
    default:
      break;
  }
}

}  // namespace

Tensor Compute(std::vector<int64_t> shape, const FBody& fbody, const std::string& name) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->shape = std::move(shape);
  std::vector<Expr> vars;
  for (size_t i = 0; i < n->shape.size(); ++i) {
    Expr v = MakeVar(name + "_i" + std::to_string(i));
    n->axis.push_back(IterVar{v, n->shape[i]});
    vars.push_back(v);
  }
  n->body = fbody(vars);
  if (!n->body.defined()) throw std::runtime_error("te: compute " + name + " has no body");
  if (n->body.kind() == ExprKind::kReduce) {
    // fine: a reduction stage
  }
  n->dtype = n->body.dtype();
  std::set<const TensorNode*> seen;
  CollectInputs(n->body, &n->inputs, &seen);
  return Tensor(n);
}

Tensor ComputeMaterialized(std::vector<int64_t> shape, const FBody& fbody,
                           const std::string& name) {
  Tensor t = Compute(std::move(shape), fbody, name);
  auto n = std::const_pointer_cast<TensorNode>(t.node());
  n->materialize = true;
  return t;
}

}  // namespace ember::compiler::te
