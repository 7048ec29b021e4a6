// Helpers shared by the compute rules in compiler/ops/ (private to the kernel side).
#ifndef EMBER_COMPILER_OPS_OP_COMMON_H_
#define EMBER_COMPILER_OPS_OP_COMMON_H_

#include <ember/compiler/ir/graph.h>
#include <ember/compiler/ir/op_registry.h>

#include <string>
#include <vector>

#include "ember/compiler/te/expr.h"
#include "ember/compiler/te/tensor.h"

namespace ember::compiler::ops {

using te::Expr;
using te::Tensor;

/*! \brief The graph whose nodes are being lowered (set by lowering, read by compute rules that
 * need constant inputs such as Clip's min or Reshape's shape). */
class GraphScope {
 public:
  explicit GraphScope(const Graph* g);
  ~GraphScope();
  static const Graph* Current();

 private:
  const Graph* prev_;
};

/*! \brief Constant data of node input i, or null when absent or not constant. */
HostTensorPtr ConstInput(const Node& node, size_t i);
/*! \brief Graph type of node input i (throws if absent). */
const TensorType& InputType(const Node& node, size_t i);

/*! \brief A te tensor holding constant data (only small tensors: selects over the flat index). */
Tensor ConstTensor(const HostTensor& data, const std::string& name);

/*! \brief Normalises a possibly negative axis against rank; throws naming the node. */
int64_t NormAxis(const Node& node, int64_t axis, int64_t rank);

/*! \brief UnsupportedError "<node>: <what>". */
[[noreturn]] void Unsupported(const Node& node, const std::string& what);
[[noreturn]] void Fail(const Node& node, const std::string& what);
/*! \brief Refuses (Unsupported) an input `x` that is not floating-point, or not an integer
 *  (bool counts as one). */
void RequireFloat(const Node& node, const Expr& x);
void RequireInteger(const Node& node, const Expr& x);

/*! \brief Index expressions of `t` broadcast (numpy rules) to an output of rank out_rank. */
Expr BroadcastLoad(const Tensor& t, const std::vector<Expr>& out_idx);

/*! \brief Converts a dtype declared by the graph into the te expression dtype (bool -> i1). */
te::DataType ExprType(DLDataType t);

/*! \brief The NCHW view of a tensor stored in NCHW[block]c (block 0: the tensor itself). */
Tensor UnblockedView(const Tensor& t, int64_t block, const std::string& name);
/*! \brief An NCHW tensor seen as NCHW[block]c (block > 0). */
Tensor BlockedView(const Tensor& t, int64_t block, const std::string& name);

/*! \brief Index k (any integer type) into an axis of `extent`, negative ones counted from the
 * end; ClampedIndex also clamps it into the axis, so that a load stays in bounds whatever the
 * index (lowering refuses a bad one first: RunTimeIndexRange). */
Expr IndexFromEnd(const Expr& k, int64_t extent);
Expr ClampedIndex(const Expr& k, int64_t extent);

/*! \brief The message a failed run-time index check starts with, naming the node, the input
 * (`value`: its graph name) and the range ("node 'g' (Gather): indices 'ids' hold an index
 * outside -3..2 (axis 0 has size 3): "); the offending value follows. */
std::string RunTimeIndexMessage(const Node& node, const RunTimeIndexRange& range,
                                const std::string& value);

/*! \brief Run-time indices (input 1) that address `axis` of input 0 (`data`), counting from the
 * end when negative; with step > 1, component `first` of tuples of `step` (GatherND's). */
RunTimeIndexRange IndicesIntoAxis(const std::vector<int64_t>& data, int64_t axis, int64_t first = 0,
                                  int64_t step = 1);

/*! \brief Reads input i as a tensor; throws when it is absent. */
const Tensor& In(const Node& node, const std::vector<Tensor>& inputs, size_t i);

}  // namespace ember::compiler::ops

#endif  // EMBER_COMPILER_OPS_OP_COMMON_H_
