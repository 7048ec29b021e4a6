// The elementwise epilogue of a fused group whose anchor (a conv, a dense product, a pool) a
// schedule computes itself: the group's other nodes lowered around the anchor's result, either
// as loops over a workspace holding it (LowerEpilogue) or as a per-element expression a schedule
// applies in registers before its one store (BuildEpilogueAt).
#ifndef EMBER_COMPILER_SCHEDULE_EPILOGUE_H_
#define EMBER_COMPILER_SCHEDULE_EPILOGUE_H_

#include <ember/compiler/ir/fused_group.h>

#include <functional>
#include <map>
#include <vector>

#include "ember/compiler/lower.h"

namespace ember::compiler::schedule {

/*! \brief True when value `vid` is one of the group's inputs (read, not computed, inside it). */
bool IsGroupInput(const FusedGroup& group, int vid);

/*! \brief The argument buffer of the first group input that is value `vid`, in a function whose
 * arguments start with the group's inputs; null when `vid` is none of them. */
lower::Buffer GroupInputBuffer(const FusedGroup& group, const lower::LoweredFunc& f, int vid);

/*! \brief The group's function with no body yet: its name and arguments (the group's inputs,
 * then its output), for a schedule that writes the output itself. */
lower::LoweredFunc GroupFunction(const FusedGroup& group);

/*! \brief The anchor's output tensor given `raw`, the placeholder of its result in the
 * workspace, and the tensors of the group's inputs by value id. */
using AnchorOutput =
    std::function<te::Tensor(const te::Tensor& raw, const std::map<int, te::Tensor>& inputs)>;

/*!
 * \brief Lowers the group with its anchor replaced by `output` over a float32 workspace `raw`
 * describes (name, shape; "_ws" is appended to the name). The returned function's body is the
 * epilogue only and its arguments are the group's inputs, then its output; *result is the
 * workspace (already in f.workspaces). The caller prepends the statements that fill *result.
 * Returns false (leaving *f alone) when a node has no usable compute.
 */
bool LowerEpilogue(const FusedGroup& group, const Node& anchor, const lower::ArgInfo& raw,
                   const AnchorOutput& output, const lower::ScheduleOptions& opts,
                   lower::LoweredFunc* f, lower::Buffer* result);

/*! \brief Value of the group's output at element i given the anchor's raw result `acc` there
 * (no bias): bias and epilogue nodes applied, loads on the function's arguments. */
using EpilogueAt = std::function<te::Expr(const std::vector<te::Expr>& i, const te::Expr& acc)>;

/*! \brief The operands of a group's anchor (a conv, a dense product) BuildEpilogueAt needs. */
struct AnchorOperands {
  int x_id = -1, w_id = -1;  // value ids of the data and the weights
  int bias_id = -1;          // value id of the bias the anchor adds, or < 0
  /*! \brief The bias element added at output element i (unused without a bias). */
  std::function<std::vector<te::Expr>(const std::vector<te::Expr>& i)> bias_index;
  /*! \brief The type of the anchor's raw result: float32, or int32 (an integer conv), whose
   * epilogue may also narrow to 8-bit integers (a requantization). */
  te::DataType result = te::Float(32);
};

/*! \brief The bias the anchor adds at output element i (an undefined Expr without one). */
using BiasAt = std::function<te::Expr(const std::vector<te::Expr>& i)>;

/*!
 * \brief The group's epilogue as a per-element expression, for schedules that apply it in
 * registers before their single store. Fills f->name and f->args (the group inputs, then the
 * output; f->body stays empty), *x and *w (the anchor's data and weight buffers) and *at. With
 * `bias`, *at takes the raw result with the bias already added and *bias gives the bias: a
 * schedule starts its accumulators from it instead of adding it at the end. Returns false when a
 * node has no usable compute or an epilogue node reads the anchor's result at another element
 * than the one it writes.
 */
bool BuildEpilogueAt(const FusedGroup& group, const Node& anchor, const AnchorOperands& operands,
                     lower::LoweredFunc* f, lower::Buffer* x, lower::Buffer* w, EpilogueAt* at,
                     BiasAt* bias = nullptr);

/*! \brief True when applying `at` at (n, oc, 0, q), q = oh * OW + ow the flat plane position,
 * reads every operand where (n, oc, oh, ow) would: each operand reads the whole output plane or
 * none of it (no broadcast along one spatial axis only). Lets a schedule run the epilogue over
 * flat plane positions. */
bool EpilogueReadsPlaneFlat(const EpilogueAt& at, int64_t ow);

/*! \brief EpilogueReadsPlaneFlat for an epilogue on NCHW[x]c blocks, applied at
 * (n, cb, oh, ow, lane) as EpilogueOnBlockVector does: at (n, cb, 0, q) it reads what it reads
 * at (n, cb, oh, ow), whatever the layout of each operand. */
bool EpilogueReadsBlockPlaneFlat(const EpilogueAt& at, int64_t ow);

/*! \brief `at` applied to a vector `acc` of `lanes` channels of one NCHW[lanes]c block at
 * (n, cb, oh, ow), lane k being channel cb * lanes + k; undefined when the epilogue does not
 * vectorize (VectorizeLanes refuses intrinsics on lane-dependent values, for one). */
te::Expr EpilogueOnBlockVector(const EpilogueAt& at, const te::Expr& n, const te::Expr& cb,
                               const te::Expr& oh, const te::Expr& ow, const te::Expr& acc,
                               int lanes);

/*! \brief The vector of the bias `bias` adds to the `lanes` channels of NCHW[lanes]c block cb of
 * image n (the bias depends on the channel only); undefined without a bias. */
te::Expr BiasOnBlockVector(const BiasAt& bias, const te::Expr& n, const te::Expr& cb, int lanes);

/*! \brief True when EpilogueOnBlockVector is defined for this epilogue on a vector of `acc`
 * (float32 sums, or an integer conv's int32 ones). */
bool EpilogueVectorizes(const EpilogueAt& at, int lanes, te::DataType acc = te::Float(32));

}  // namespace ember::compiler::schedule

#endif  // EMBER_COMPILER_SCHEDULE_EPILOGUE_H_
