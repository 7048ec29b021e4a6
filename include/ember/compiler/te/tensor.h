/*!
 * \file ember/compiler/te/tensor.h
 * \brief Tensors of the te DSL: placeholders (kernel inputs) and computes (a body per element).
 */
#ifndef EMBER_COMPILER_TE_TENSOR_H_
#define EMBER_COMPILER_TE_TENSOR_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ember/compiler/te/expr.h"

namespace ember::compiler::te {

/*! \brief A placeholder (body undefined) or a compute: out[axis...] = body. */
class TensorNode {
 public:
  std::string name;
  std::vector<int64_t> shape;  // static; {} is a 0-d scalar
  DataType dtype{kDLFloat, 32, 1};
  std::vector<IterVar> axis;  // one per dim, compute only
  Expr body;                  // undefined for a placeholder
  /*! \brief Inputs read by body (filled by compute()); used to walk the stage graph. */
  std::vector<std::shared_ptr<const TensorNode>> inputs;
  /*! \brief Schedule hint: keep this stage in its own buffer instead of inlining it into its
   * consumers (e.g. a padded conv input, so the conv's inner loop reads without bounds checks). */
  bool materialize = false;
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const TensorNode* operator->() const { return node_.get(); }
  const TensorNode* get() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& node() const { return node_; }
  const std::vector<int64_t>& shape() const { return node_->shape; }
  int ndim() const { return static_cast<int>(node_->shape.size()); }
  DataType dtype() const { return node_->dtype; }
  bool is_placeholder() const { return !node_->body.defined(); }
  int64_t NumElements() const;

  /*! \brief Element access; index count must equal ndim (checked). */
  Expr operator()(const std::vector<Expr>& indices) const;
  template <typename... Args>
  Expr operator()(Args... args) const {
    return (*this)(std::vector<Expr>{Expr(args)...});
  }

 private:
  std::shared_ptr<const TensorNode> node_;
};

/*! \brief tensor[indices]; the te-level read. */
class TensorLoadNode : public ExprNode {
 public:
  TensorLoadNode(Tensor t, std::vector<Expr> idx)
      : ExprNode(ExprKind::kTensorLoad, t.dtype()), tensor(std::move(t)), indices(std::move(idx)) {}
  Tensor tensor;
  std::vector<Expr> indices;
};

using FBody = std::function<Expr(const std::vector<Expr>& indices)>;

Tensor Placeholder(std::vector<int64_t> shape, DataType dtype, const std::string& name);
/*! \brief out[i...] = fbody(i...); the dtype is the body's. */
Tensor Compute(std::vector<int64_t> shape, const FBody& fbody, const std::string& name);
/*! \brief Compute() with the materialize hint set. */
Tensor ComputeMaterialized(std::vector<int64_t> shape, const FBody& fbody, const std::string& name);

}  // namespace ember::compiler::te

#endif  // EMBER_COMPILER_TE_TENSOR_H_
