// What an op's canonicalization rule (OpDef::canonicalize) gets from the Canonicalize pass: the
// graph, the model's opset, and emitters that type and fold each node as it is emitted.
#ifndef EMBER_COMPILER_TRANSFORM_CANONICALIZE_CONTEXT_H_
#define EMBER_COMPILER_TRANSFORM_CANONICALIZE_CONTEXT_H_

#include <ember/compiler/ir/graph.h>
#include <ember/compiler/strategy.h>

#include <string>
#include <vector>

#include "transform/rewrite_context.h"

namespace ember {
namespace compiler {

class CanonicalizeContext : public RewriteContext {
 public:
  /*! \brief The model's ai.onnx opset, for version differences. */
  virtual int64_t opset() const = 0;
  /*! \brief The kernel strategy of the target being compiled for, for forms that exist only
   *  where a kernel takes them (an integer conv); null: the target-independent forms. */
  virtual const KernelStrategy* strategy() const = 0;

  const TensorType& TypeOf(int id) { return graph().value(id).type; }
  int64_t Rank(const Node& n, size_t i) { return TypeOf(n.inputs.at(i)).ndim(); }
  /*! \brief Input i's constant (null when absent); throws naming the node when it is not one. */
  HostTensorPtr ConstInput(const Node& n, size_t i, const char* what);
  /*! \brief As ConstInput, for an input the op cannot do without: absent, it throws naming it. */
  HostTensorPtr RequiredConstInput(const Node& n, size_t i, const char* what);
  /*! \brief Input i, a constant of one value (a scalar or one element: TopK's k, a window's
   *  size); throws naming the node when it is absent, not constant or holds another count. */
  HostTensorPtr OneValueInput(const Node& n, size_t i, const char* what);
  /*! \brief Elements first, first + step, ... of input `input` (when constant) must lie in
   *  [-extent, extent): indices into an axis `what` names ("axis 1"); throws naming the index. */
  void CheckConstantIndices(const Node& n, size_t input, int64_t extent, const std::string& what,
                            int64_t first = 0, int64_t step = 1);
  /*! \brief Moves input i (if present and constant) into attribute `key` as ints. */
  void IntsInputToAttr(Node& n, size_t i, const char* key);
  void DropInputsFrom(Node& n, size_t keep);
  /*! \brief Makes value `id` the constant c (its type too). */
  void SetConstOutput(int id, HostTensorPtr c);
  /*! \brief Makes value `id` (an output of n) a tensor of `shape` filled with the first element
   *  of `value`: a constant up to kMaxFoldElements, past it an Expand of that element, so a
   *  huge ConstantOfShape costs the kernels its memory at run time, not emberc at compile time. */
  void SetFilledOutput(const Node& n, int id, const std::vector<int64_t>& shape,
                       const HostTensor& value);

  /*! \brief Canonicalizes `node` where it stands, as the pass does every node of the graph
   * (a node of a subgraph being instantiated: an If's taken branch, a Loop's unrolled body). */
  virtual void Canonicalize(Node node) = 0;
  /*! \brief Canonicalizes `nodes` into a list of their own rather than the graph (a branch that
   * stays a subgraph); their values are typed and folded as usual. */
  virtual std::vector<Node> CanonicalizeApart(std::vector<Node> nodes) = 0;
  /*! \brief Appends `node` as it is: its outputs' types are already set (a node no shape rule
   * describes, such as an If whose branches were canonicalized apart). */
  virtual void EmitTyped(Node node) = 0;
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_CANONICALIZE_CONTEXT_H_
