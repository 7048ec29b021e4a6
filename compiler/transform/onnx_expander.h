// Writing an op's expansion as ONNX nodes: each step is canonicalized where it stands, as the
// pass canonicalizes the model's own nodes (at its opset), so a rule writes the ONNX forms it
// reads rather than the canonical attributes.
#ifndef EMBER_COMPILER_TRANSFORM_ONNX_EXPANDER_H_
#define EMBER_COMPILER_TRANSFORM_ONNX_EXPANDER_H_

#include <ember/compiler/ir/graph.h>

#include <string>
#include <utility>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"
#include "ir/shape_util.h"
#include "transform/canonicalize_context.h"

namespace ember {
namespace compiler {

class OnnxExpander {
 public:
  OnnxExpander(const Node& node, CanonicalizeContext* ctx) : node_(node), ctx_(ctx) {}

  /*! \brief Emits `op` on `inputs` into a fresh value named after the node; returns it. */
  int Op(const std::string& op, std::vector<int> inputs, AttrMap attrs = {}) {
    Graph& g = ctx_->graph();
    const std::string name = node_.name + "_" + op + std::to_string(count_++);
    const int out = g.AddValue(g.UniqueName(name), TensorType{});
    ctx_->Canonicalize(Node{op, name, std::move(attrs), std::move(inputs), {out}});
    return out;
  }
  /*! \brief The last step writes the node's own output `out`. */
  void OpInto(int out, const std::string& op, std::vector<int> inputs, AttrMap attrs = {}) {
    ctx_->Canonicalize(Node{op, node_.name, std::move(attrs), std::move(inputs), {out}});
  }
  int Cast(int x, DLDataType to) { return Op("Cast", {x}, {{"to", int64_t{DTypeToOnnx(to)}}}); }
  /*! \brief ReduceSum of x over `axes`, kept as unit dims (axes an input from opset 13 on). */
  int ReduceSum(int x, const std::vector<int64_t>& axes) {
    if (ctx_->opset() < 13) return Op("ReduceSum", {x}, {{"axes", axes}, {"keepdims", int64_t{1}}});
    return Op("ReduceSum", {x, Ints(axes)}, {{"keepdims", int64_t{1}}});
  }
  int Constant(const std::string& suffix, HostTensorPtr value) {
    return ctx_->Constant(node_.name + suffix, std::move(value));
  }
  /*! \brief An int64 vector constant (axes, starts, a shape). */
  int Ints(const std::vector<int64_t>& values) { return Constant("_i", MakeInt64Tensor(values)); }
  int Scalar(DLDataType dtype, double v) { return ctx_->Scalar(node_.name + "_k", dtype, v); }
  /*! \brief Input i, a 3-D (batch, sequence, hidden) value, split into the heads attribute
   *  `heads_attr` counts: (batch, sequence, heads, hidden / heads), its shape in `shape`; throws
   *  naming `what` unless the heads divide the hidden size (RotaryEmbedding's and Attention's
   *  packed inputs). */
  int SplitHeads(size_t i, const std::string& what, const std::string& heads_attr,
                 std::vector<int64_t>* shape) {
    const TensorType& t = TypeOf(node_.inputs.at(i));
    const int64_t heads = node_.GetInt(heads_attr, 0);
    if (heads < 1 || t.shape[2] % heads != 0) {
      NodeError(node_, "a 3-D " + what + " needs " + heads_attr + " dividing its hidden size " +
                           std::to_string(t.shape[2]) + ", got " + heads_attr + " " +
                           std::to_string(heads));
    }
    *shape = {t.shape[0], t.shape[1], heads, t.shape[2] / heads};
    return Op("Reshape", {node_.inputs[i], Ints(*shape)});
  }
  const TensorType& TypeOf(int id) { return ctx_->TypeOf(id); }
  /*! \brief Value id's constant data; null when it is computed at run time. */
  HostTensorPtr ConstantOf(int id) { return ctx_->graph().value(id).constant; }

  const Node& node() const { return node_; }
  Graph& graph() { return ctx_->graph(); }
  const KernelStrategy* strategy() const { return ctx_->strategy(); }
  int Input(size_t i) const { return node_.HasInput(i) ? node_.inputs[i] : kAbsentValue; }

 protected:
  const Node& node_;
  CanonicalizeContext* ctx_;

 private:
  int count_ = 0;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_ONNX_EXPANDER_H_
