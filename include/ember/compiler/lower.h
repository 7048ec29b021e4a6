/*!
 * \file ember/compiler/lower.h
 * \brief The loop IR a fused group lowers to, and the lowering entry point.
 *
 * A LoweredFunc is flat: argument buffers (DLTensors of the packed function), workspace buffers
 * (TVMBackendAllocWorkspace) and local scalars, and a statement tree of loops and stores on flat
 * element indices.
 */
#ifndef EMBER_COMPILER_LOWER_H_
#define EMBER_COMPILER_LOWER_H_

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/compiler/te/expr.h"
#include "ember/compiler/te/tensor.h"

namespace ember::compiler {

struct FusedGroup;
struct Target;

namespace autotune {
class TuningLog;
}  // namespace autotune
namespace schedule {
struct TuningTask;
}  // namespace schedule

namespace lower {

/*! \brief Where a buffer lives: a packed-function argument, workspace memory allocated at entry,
 * the stack, or read-only data inside lib.so (a weight of a branch of an If, which the artifact's
 * params cannot reach). */
enum class BufferScope { kArg, kWorkspace, kLocal, kConstant };

class BufferNode {
 public:
  std::string name;
  te::DataType dtype;
  int64_t size = 0;  // elements
  BufferScope scope = BufferScope::kArg;
  int arg_index = -1;  // kArg only
  /*! \brief kConstant only: the contents, laid out as the runtime lays out an NDArray. */
  std::vector<uint8_t> bytes;
};
using Buffer = std::shared_ptr<const BufferNode>;

/*! \brief A buffer of `size` elements of `dtype` in `scope` (`arg_index`: kArg only). The name
 * is made an identifier (it names the buffer in the loop-IR text and in LLVM IR). */
Buffer NewBuffer(const std::string& name, te::DataType dtype, int64_t size, BufferScope scope,
                 int arg_index = -1);

/*! \brief buffer[index] (flat element index). A load of a vector type reads that many
 * consecutive elements from `index` on (a buffer of vector type holds whole vectors). */
class BufferLoadNode : public te::ExprNode {
 public:
  BufferLoadNode(Buffer b, te::Expr i) : BufferLoadNode(b->dtype, b, std::move(i)) {}
  BufferLoadNode(te::DataType t, Buffer b, te::Expr i)
      : te::ExprNode(te::ExprKind::kBufferLoad, t), buffer(std::move(b)), index(std::move(i)) {}
  Buffer buffer;
  te::Expr index;
};
te::Expr BufferLoad(const Buffer& b, te::Expr index);
/*! \brief buffer[index .. index + lanes) as one vector (a plain load when lanes is 1). */
te::Expr VectorLoad(const Buffer& b, te::Expr index, int lanes);

enum class StmtKind { kFor, kStore, kIf, kSeq, kPrefetch, kIndexCheck };
enum class ForKind { kSerial, kParallel, kVectorized, kUnrolled };

class StmtNode {
 public:
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  StmtKind kind;
};
using Stmt = std::shared_ptr<const StmtNode>;

/*! \brief for (var = 0; var < extent; ++var) body */
class ForNode : public StmtNode {
 public:
  ForNode() : StmtNode(StmtKind::kFor) {}
  te::Expr var;
  int64_t extent = 0;
  ForKind for_kind = ForKind::kSerial;
  /*! \brief Serial loop LLVM must neither vectorise nor unroll (a register-blocked body). */
  bool keep_scalar = false;
  /*! \brief kVectorized only: > 1 forces this vector width and keeps LLVM from fully unrolling
   * the loop before it is vectorised (a schedule's one-register step of small trip count). */
  int vector_lanes = 0;
  /*! \brief Serial or vectorised loops: when defined, the loop stops at min(extent, limit), a
   * bound known only at run time (extent stays the most trips it can take). */
  te::Expr limit;
  Stmt body;
};

/*! \brief buffer[index] = value; a vector value fills consecutive elements from `index` on. */
class StoreNode : public StmtNode {
 public:
  StoreNode() : StmtNode(StmtKind::kStore) {}
  Buffer buffer;
  te::Expr index;
  te::Expr value;
};

/*! \brief A hint that buffer[index] will be read soon: its cache line is fetched towards L2
 * without waiting for it (an address past the buffer is clamped; a prefetch never faults). */
class PrefetchNode : public StmtNode {
 public:
  PrefetchNode() : StmtNode(StmtKind::kPrefetch) {}
  Buffer buffer;
  te::Expr index;
};

/*! \brief Every one of the `count` integers of `buffer` must lie in [-extent, extent); the
 * first that does not ends the function with -1 and TVMAPISetLastError(`message` + the index).
 * A kernel's checks on its arguments run at entry (LoweredFunc::index_checks); this form checks
 * indices where they are read, inside the branch of an If that computes them. Never inside a
 * parallel loop. */
class IndexCheckNode : public StmtNode {
 public:
  IndexCheckNode() : StmtNode(StmtKind::kIndexCheck) {}
  Buffer buffer;
  int64_t count = 0;  // elements first, first + step, ... below count
  int64_t extent = 0;
  std::string message;
  int64_t first = 0;
  int64_t step = 1;
  bool non_negative = false;  // [0, extent) instead
};

class IfNode : public StmtNode {
 public:
  IfNode() : StmtNode(StmtKind::kIf) {}
  te::Expr cond;
  Stmt then_case;
  Stmt else_case;  // may be null
};

class SeqNode : public StmtNode {
 public:
  SeqNode() : StmtNode(StmtKind::kSeq) {}
  std::vector<Stmt> stmts;
};

Stmt For(te::Expr var, int64_t extent, ForKind kind, Stmt body);
/*! \brief A serial loop LLVM must neither vectorise nor unroll: the register-blocked body of a
 * schedule, whose tile is already explicit. Extent 1 returns the body with 0 in place of var. */
Stmt KeepScalarFor(te::Expr var, int64_t extent, Stmt body);
/*! \brief `loop` (from For or KeepScalarFor, not parallel) stopping at min(its extent, limit)
 * trips; a loop KeepScalarFor dropped (one trip) runs when limit > 0. */
Stmt Limited(Stmt loop, te::Expr limit);
Stmt Store(Buffer buffer, te::Expr index, te::Expr value);
Stmt If(te::Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt Prefetch(Buffer buffer, te::Expr index);
Stmt Seq(std::vector<Stmt> stmts);
/*! \brief Elements first, first + step, ... below count of integer `buffer` must lie in
 * [-extent, extent), or [0, extent) when non_negative (see IndexCheck). */
Stmt CheckIndices(Buffer buffer, int64_t count, int64_t extent, std::string message,
                  int64_t first = 0, int64_t step = 1, bool non_negative = false);

/*! \brief One argument of the packed function: a DLTensor with a static shape and dtype. */
struct ArgInfo {
  std::string name;  // graph value name, for error messages
  std::vector<int64_t> shape;
  DLDataType dtype;  // as the graph declares it (checked against the DLTensor)
  Buffer buffer;
};

/*! \brief The kArg buffer of argument `index` described by `a` (its elements, in expression type).
 */
Buffer NewArgBuffer(const ArgInfo& a, int index);

/*! \brief Every element of integer argument `arg` must lie in [-extent, extent): indices a kernel
 * reads at run time (Gather), checked once per call before the body rather than per element.
 * A bad one makes the function return -1 with TVMAPISetLastError(`message` + the index). With
 * step > 1 only elements first, first + step, ... are checked: one component of index tuples
 * (GatherND's), whose components index axes of different sizes. With non_negative, values must
 * lie in [0, extent): flat positions and lengths, which do not count from the end. */
struct IndexCheck {
  int arg = 0;
  int64_t extent = 0;
  std::string message;
  int64_t first = 0;
  int64_t step = 1;
  bool non_negative = false;
};

struct LoweredFunc {
  std::string name;
  std::vector<ArgInfo> args;  // inputs then outputs
  std::vector<IndexCheck> index_checks;
  std::vector<Buffer> workspaces;  // allocated at entry, freed at exit
  std::vector<Buffer> locals;      // scalars on the stack
  /*! \brief {view, target}: the view names target's memory under its own element type (the
   * kernels of an If's branch, stitched into one function, keep their own buffers). */
  std::vector<std::pair<Buffer, Buffer>> aliases;
  Stmt body;
  /*! \brief > 0: SIMD width in bits LLVM should prefer (a schedule's register block assumes it;
   * x86 otherwise prefers 256 bits on AVX-512 CPUs). */
  int prefer_vector_bits = 0;
  /*! \brief Float operations in written order and rounding (BuildOptions::exact_float_groups). */
  bool exact_float = false;
};

struct ScheduleOptions;

/*!
 * \brief Hand-written kernels for fused groups (compiler/schedule/ implements it): LowerGroup
 * offers each group to it first and falls back to the default schedule when it declines.
 */
class GroupScheduler {
 public:
  virtual ~GroupScheduler() = default;
  /*! \brief Lowers the group with the kernel chosen for it and returns true, or returns false
   * (leaving *out alone) when the default schedule should take it. */
  virtual bool Schedule(const FusedGroup& group, const ScheduleOptions& opts,
                        LoweredFunc* out) const = 0;
};

/*! \brief Default-schedule knobs. */
struct ScheduleOptions {
  /*! \brief Parallelise an outer loop when the nest does at least this many element updates. */
  int64_t parallel_min_work = 1 << 15;
  bool parallel = true;
  /*! \brief Target being compiled for; group schedules (compiler/schedule/) key on it. */
  const Target* target = nullptr;
  /*! \brief Hand-written kernels to offer each group to; null: the default schedule only. */
  const GroupScheduler* scheduler = nullptr;
  /*! \brief Winners tunable schedules take instead of their table defaults (compiler/schedule/
   * tuning.h); null: the defaults. */
  const autotune::TuningLog* tuning_log = nullptr;
  /*! \brief Set by the tuner: tunable schedules append the workload they describe here. */
  std::vector<schedule::TuningTask>* tuning_tasks = nullptr;
};

/*!
 * \brief Lowers te output tensors of one function: injective stages are inlined into consumers,
 * reductions and outputs are materialised. `inputs` are placeholders bound to the first
 * arguments, `outputs` to the following ones.
 */
LoweredFunc LowerTensors(const std::string& name, const std::vector<te::Tensor>& inputs,
                         const std::vector<te::Tensor>& outputs,
                         const std::vector<ArgInfo>& arg_infos, const ScheduleOptions& opts);

/*! \brief Builds te tensors for every node of the group through the op registry's compute rules
 * and lowers them. Throws UnsupportedError naming the node when an op has no compute rule. */
LoweredFunc LowerGroup(const FusedGroup& group, const ScheduleOptions& opts);

using VarMap = std::unordered_map<const te::ExprNode*, te::Expr>;

/*! \brief e with the variables of `vars` replaced (TensorLoads kept as they are). */
te::Expr Substitute(const te::Expr& e, const VarMap& vars);

/*! \brief s with fn applied to every expression of its statements (indices, values, conditions);
 * loops keep their kind. */
Stmt MapExprs(const Stmt& s, const std::function<te::Expr(const te::Expr&)>& fn);

/*! \brief s with the variables of `vars` replaced in every expression; loops keep their kind. */
Stmt SubstituteStmt(const Stmt& s, const VarMap& vars);

/*! \brief s with the index arithmetic of its vectorised loops made affine where it is exactly so:
 * (r + v) mod k -> (r mod k) + v and (r + v) / k -> r / k for the loop's v in [0, E) when every r
 * is a multiple of some m >= E dividing k (vector_index.cc), so that LLVM loads a vector instead
 * of gathering lanes. */
Stmt UnitStrideVectorIndices(const Stmt& s);

/*! \brief s with `value` in place of `var`. */
Stmt SubstituteVar(const Stmt& s, const te::Expr& var, const te::Expr& value);

/*! \brief Does `var` occur in e (load indices included)? */
bool Occurs(const te::Expr& e, const te::ExprNode* var);

/*! \brief *c = coefficient of var in an index expression affine in it (0 when var does not
 * occur); false when e is not affine in var. */
bool LinearCoeff(const te::Expr& e, const te::ExprNode* var, int64_t* c);

/*! \brief Calls fn on every buffer load in e (loads inside load indices included). */
void VisitLoads(const te::Expr& e, const std::function<void(const BufferLoadNode*)>& fn);

/*!
 * \brief The vector whose lane k is e evaluated at var = base + k, k < lanes: loads whose index
 * moves by one element per step of var become vector loads, everything var does not reach stays
 * scalar and is broadcast where it meets a vector (vector-typed leaves, such as a register tile's
 * accumulator, are kept). Returns an undefined Expr when e reads at another stride, calls an
 * intrinsic on a lane-dependent value or uses var as a value; lanes == 1 substitutes base.
 */
te::Expr VectorizeLanes(const te::Expr& e, const te::ExprNode* var, const te::Expr& base,
                        int lanes);

/*! \brief Variables and (non-local) buffers a loop's body reads but does not bind, in order of
 * first use; the loop's own variable and those of loops inside it are bound. */
struct FreeVars {
  std::vector<const te::ExprNode*> vars;
  std::vector<const BufferNode*> buffers;
};
FreeVars CollectFreeVars(const ForNode& loop);

/*! \brief Text form of a lowered function (for --dump-ir and tests). */
std::string ToText(const LoweredFunc& f);

}  // namespace lower
}  // namespace ember::compiler

#endif  // EMBER_COMPILER_LOWER_H_
