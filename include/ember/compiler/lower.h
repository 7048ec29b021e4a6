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

#include <memory>
#include <string>
#include <vector>

#include "ember/compiler/te/expr.h"
#include "ember/compiler/te/tensor.h"

namespace ember::compiler {

struct FusedGroup;
struct Target;

namespace schedule {
class TuningLog;
struct TuningTask;
}  // namespace schedule

namespace lower {

enum class BufferScope { kArg, kWorkspace, kLocal };

class BufferNode {
 public:
  std::string name;
  te::DataType dtype;
  int64_t size = 0;  // elements
  BufferScope scope = BufferScope::kArg;
  int arg_index = -1;  // kArg only
};
using Buffer = std::shared_ptr<const BufferNode>;

/*! \brief buffer[index] (flat element index). */
class BufferLoadNode : public te::ExprNode {
 public:
  BufferLoadNode(Buffer b, te::Expr i)
      : te::ExprNode(te::ExprKind::kBufferLoad, b->dtype),
        buffer(std::move(b)),
        index(std::move(i)) {}
  Buffer buffer;
  te::Expr index;
};
te::Expr BufferLoad(const Buffer& b, te::Expr index);

enum class StmtKind { kFor, kStore, kIf, kSeq };
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
  Stmt body;
};

class StoreNode : public StmtNode {
 public:
  StoreNode() : StmtNode(StmtKind::kStore) {}
  Buffer buffer;
  te::Expr index;
  te::Expr value;
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
Stmt Store(Buffer buffer, te::Expr index, te::Expr value);
Stmt If(te::Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt Seq(std::vector<Stmt> stmts);

/*! \brief One argument of the packed function: a DLTensor with a static shape and dtype. */
struct ArgInfo {
  std::string name;  // graph value name, for error messages
  std::vector<int64_t> shape;
  DLDataType dtype;  // as the graph declares it (checked against the DLTensor)
  Buffer buffer;
};

struct LoweredFunc {
  std::string name;
  std::vector<ArgInfo> args;       // inputs then outputs
  std::vector<Buffer> workspaces;  // allocated at entry, freed at exit
  std::vector<Buffer> locals;      // scalars on the stack
  Stmt body;
  /*! \brief > 0: SIMD width in bits LLVM should prefer (a schedule's register block assumes it;
   * x86 otherwise prefers 256 bits on AVX-512 CPUs). */
  int prefer_vector_bits = 0;
};

/*! \brief Default-schedule knobs. */
struct ScheduleOptions {
  /*! \brief Parallelise an outer loop when the nest does at least this many element updates. */
  int64_t parallel_min_work = 1 << 15;
  bool parallel = true;
  /*! \brief Target being compiled for; group schedules (compiler/schedule/) key on it. */
  const Target* target = nullptr;
  /*! \brief Winners tunable schedules take instead of their table defaults (compiler/schedule/
   * tuning.h); null: the defaults. */
  const schedule::TuningLog* tuning_log = nullptr;
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

/*!
 * \brief Group schedules (compiler/schedule/): LowerGroup first offers the group to the schedules
 * registered for opts.target; the first that returns true has filled *out. Defined in
 * compiler/schedule/schedule_table.cc.
 */
bool TryGroupSchedules(const FusedGroup& group, const ScheduleOptions& opts, LoweredFunc* out);

/*! \brief Text form of a lowered function (for --dump-ir and tests). */
std::string ToText(const LoweredFunc& f);

}  // namespace lower
}  // namespace ember::compiler

#endif  // EMBER_COMPILER_LOWER_H_
