// What an op's expansion into other ops needs from the pass that runs it (canonicalization): the
// graph, and a way to emit nodes that are typed and folded as they are emitted.
#ifndef EMBER_COMPILER_TRANSFORM_REWRITE_CONTEXT_H_
#define EMBER_COMPILER_TRANSFORM_REWRITE_CONTEXT_H_

#include <ember/compiler/ir/graph.h>

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"

namespace ember {
namespace compiler {

/*! \brief Past this many instantiated nodes an unrolled Loop or recurrence (LSTM, GRU, RNN) is
 *  refused rather than unrolled: its steps share their kernels, but the graph, the memory plan and
 *  the kernel keys still grow with it (65536 nodes compile in about 20 s). */
constexpr int64_t kMaxUnrolledNodes = 1 << 16;

class RewriteContext {
 public:
  virtual ~RewriteContext() = default;
  virtual Graph& graph() = 0;
  /*! \brief Emits `op` (canonical attributes) on `inputs` into a fresh value; returns its id. */
  virtual int Emit(const std::string& op, const std::string& name, std::vector<int> inputs,
                   AttrMap attrs = {}) = 0;
  /*! \brief Emits a node whose outputs already exist (the expanded node's own outputs). */
  virtual void EmitInto(Node node) = 0;
  /*! \brief A constant value named after `name`. */
  int Constant(const std::string& name, HostTensorPtr value) {
    return graph().AddConstant(graph().UniqueName(name), std::move(value));
  }
  /*! \brief A scalar constant of `dtype` holding v (converted as a fold converts), named after
   *  `name`: the epsilon, count or index an expansion needs. */
  int Scalar(const std::string& name, DLDataType dtype, double v) {
    return Constant(name, MakeScalarTensor(dtype, v));
  }
  /*! \brief Value `v` cast to `dtype` (a canonical Cast), named after `name`. */
  int Cast(const std::string& name, int v, DLDataType dtype) {
    return Emit("Cast", name, {v},
                {{"to", int64_t{DTypeToOnnx(dtype)}}, {"__dtype", DTypeToString(dtype)}});
  }
};

}  // namespace compiler
}  // namespace ember

#endif  // EMBER_COMPILER_TRANSFORM_REWRITE_CONTEXT_H_
