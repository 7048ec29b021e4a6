// What the loop rules (OpDef::loop_kernel) of compiler/ops/loop_kernels*.cc share: when rows run
// in parallel, and the run-time check of an index input before a kernel's loops.
#ifndef EMBER_COMPILER_OPS_LOOP_KERNEL_UTIL_H_
#define EMBER_COMPILER_OPS_LOOP_KERNEL_UTIL_H_

#include <string>
#include <utility>

#include "ember/compiler/lower.h"
#include "op_common.h"

namespace ember::compiler::ops {

/*! \brief A loop nest does at least this many element updates before its rows run in parallel. */
constexpr int64_t kParallelWork = int64_t{1} << 15;

/*! \brief Parallel rows for `rows` > 1 of `work` element updates in all, else serial. */
inline lower::ForKind RowsLoop(int64_t rows, int64_t work) {
  return rows > 1 && work >= kParallelWork ? lower::ForKind::kParallel : lower::ForKind::kSerial;
}

/*! \brief A local buffer of `size` elements of `t` that `f` holds (a kernel's registers or
 *  small stack arrays). */
inline lower::Buffer AddLocal(lower::LoweredFunc* f, const std::string& name, te::DataType t,
                              int64_t size = 1) {
  lower::Buffer b = lower::NewBuffer(name, t, size, lower::BufferScope::kLocal);
  f->locals.push_back(b);
  return b;
}

/*! \brief Makes `fn` the loop rule of `op` (OpDef::loop_kernel). */
inline void RegisterLoopKernel(const char* op, FLoopKernel fn) {
  OpRegistry::Global()->Mutable(op).set_loop_kernel(std::move(fn));
}

/*! \brief The check, before the kernel's loops, that input `i` (held in `indices`) lies in
 *  `range`, failing the run with a message naming the node, the input and the index. */
inline lower::Stmt CheckInput(const Node& n, size_t i, const lower::Buffer& indices,
                              const RunTimeIndexRange& range) {
  const std::string& name = GraphScope::Current()->value(n.inputs.at(i)).name;
  return lower::CheckIndices(indices, indices->size, range.extent,
                             RunTimeIndexMessage(n, range, name), range.first, range.step,
                             range.non_negative);
}

}  // namespace ember::compiler::ops

#endif  // EMBER_COMPILER_OPS_LOOP_KERNEL_UTIL_H_
