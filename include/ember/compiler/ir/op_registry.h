/*!
 * \file ember/compiler/ir/op_registry.h
 * \brief One entry per operator: attribute defaults, shape rule, fusion pattern, canonical form,
 *        host constant fold and compute rule.
 *
 * The graph side (compiler/ir/ops.cc) registers shape rules and patterns; canonicalization
 * (compiler/transform/canonical_*.cc) the canonical forms; the kernel side (compiler/ops/) compute
 * rules with EMBER_REGISTER_OP_COMPUTE and host folds (the ops/ files named *_fold.cc). All write
 * into the same entry, found by ONNX op type.
 */
#ifndef EMBER_COMPILER_IR_OP_REGISTRY_H_
#define EMBER_COMPILER_IR_OP_REGISTRY_H_

#include <ember/compiler/ir/graph.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ember {
namespace compiler {

namespace te {
class Tensor;  // defined by the kernel side in include/ember/compiler/te/
}  // namespace te
namespace lower {  // the loop IR, include/ember/compiler/lower.h
class BufferNode;
class StmtNode;
struct LoweredFunc;
}  // namespace lower
class CanonicalizeContext;  // compiler/transform/canonicalize_context.h

/*! \brief TVM's fusion patterns; smaller values fuse more freely. */
enum class OpPattern : int {
  kElemWise = 0,
  kBroadcast = 1,
  kInjective = 2,
  kCommReduce = 3,
  kOutEWiseFusable = 4,
  kOpaque = 8,
};
const char* OpPatternName(OpPattern p);

/*! \brief Shape rule: output types from the node and its input types (absent inputs: empty type
 *  with ndim 0 — check node.HasInput). Throws CompileError naming node and op. */
using FInferType =
    std::function<std::vector<TensorType>(const Node& node, const std::vector<TensorType>& inputs)>;

/*! \brief Host constant fold: the output tensors from the node (canonical form), the constants
 *  of its present inputs (absent ones skipped) and the output types; an empty result declines
 *  and the node stays in the graph. Errors in the data (an index out of range) throw. */
using FFold = std::function<std::vector<HostTensorPtr>(const Node& node,
                                                       const std::vector<HostTensorPtr>& inputs,
                                                       const std::vector<TensorType>& outs)>;

/*! \brief Canonicalization rule: rewrites the node into canonical form (constant inputs turned
 *  into attributes, version differences resolved, expansions into other ops) and emits the result
 *  through ctx. Ops without one are emitted as they are. */
using FCanonicalize = std::function<void(Node node, CanonicalizeContext* ctx)>;
/*! \brief Compute rule (kernel side): te tensors of the outputs from te tensors of the inputs
 *  (absent optional inputs are not passed), given the node and the output types. */
using FCompute =
    std::function<std::vector<te::Tensor>(const Node& node, const std::vector<te::Tensor>& inputs,
                                          const std::vector<TensorType>& out_types)>;

/*! \brief Loop rule (kernel side), for an op whose kernel is a loop nest written by hand instead
 *  of a compute rule (a scan, a selection, a scatter: outputs that depend on each other or on
 *  the order of the updates): the kernel's body from the buffers of the node's inputs (null where
 *  absent) and outputs. It may add locals, workspaces and index checks to `f`, whose arguments
 *  are set. Such an op is opaque, a kernel of its own. */
using FLoopKernel = std::function<std::shared_ptr<const lower::StmtNode>(
    const Node& node, const std::vector<std::shared_ptr<const lower::BufferNode>>& inputs,
    const std::vector<std::shared_ptr<const lower::BufferNode>>& outputs, lower::LoweredFunc* f)>;

/*! \brief Positions an op reads at run time from its input 1 (indices, lengths), and the range
 *  each must lie in: lowering checks them before the kernel runs, so the clamp a compute rule puts
 *  on them (to keep every load in bounds) never hides a bad one. */
struct RunTimeIndexRange {
  int64_t extent = 0;           // values in [-extent, extent), or [0, extent) with non_negative
  int64_t first = 0, step = 1;  // the elements first, first + step, ... (a tuple's component)
  bool non_negative = false;
  std::string input;  // the input's name in ONNX's definition of the op ("indices")
  std::string what;   // "an index outside -5..4 (axis 1 has size 5)"
};
/*! \brief The node's run-time index ranges, given its input types (none: an empty list). */
using FRunTimeIndices = std::function<std::vector<RunTimeIndexRange>(
    const Node& node, const std::vector<TensorType>& inputs)>;

/*! \brief True when the node's output equals its first input element for element, given their
 *  types (Simplify forwards the input): Identity always, Transpose with the identity perm, ... */
using FIsNoOp =
    std::function<bool(const Node& node, const TensorType& input, const TensorType& output)>;

/*! \brief Pattern that may depend on the node (e.g. Conv is out-elemwise-fusable, but Reshape is
 * injective). */
using FPattern = std::function<OpPattern(const Node& node)>;

/*! \brief One registry entry. Setters return *this for chaining. */
class OpDef {
 public:
  explicit OpDef(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }

  OpDef& set_pattern(OpPattern p) {
    pattern_ = p;
    return *this;
  }
  OpDef& set_pattern_fn(FPattern fn) {
    pattern_fn_ = std::move(fn);
    return *this;
  }
  OpDef& set_infer_type(FInferType fn) {
    infer_type_ = std::move(fn);
    return *this;
  }
  OpDef& set_canonicalize(FCanonicalize fn) {
    canonicalize_ = std::move(fn);
    return *this;
  }
  OpDef& set_fold(FFold fn) {
    fold_ = std::move(fn);
    return *this;
  }
  OpDef& set_compute(FCompute fn) {
    compute_ = std::move(fn);
    return *this;
  }
  OpDef& set_loop_kernel(FLoopKernel fn) {
    loop_kernel_ = std::move(fn);
    return *this;
  }
  OpDef& set_runtime_indices(FRunTimeIndices fn) {
    runtime_indices_ = std::move(fn);
    return *this;
  }
  OpDef& set_is_no_op(FIsNoOp fn) {
    is_no_op_ = std::move(fn);
    return *this;
  }
  /*! \brief The output is the input's elements in order, in another shape (Simplify merges
   *  chains of these into one Reshape). */
  OpDef& set_reshape_like() {
    reshape_like_ = true;
    return *this;
  }
  /*! \brief Inputs allowed (ONNX counts, optional ones included). */
  OpDef& set_num_inputs(int min_inputs, int max_inputs) {
    min_inputs_ = min_inputs;
    max_inputs_ = max_inputs;
    return *this;
  }
  /*! \brief Default filled in at import when the attribute is absent. */
  OpDef& set_attr_default(const std::string& key, AttrValue v) {
    attr_defaults_[key] = std::move(v);
    return *this;
  }
  /*! \brief Inputs that must be constants (int64 shape/axes/pads); index list. */
  OpDef& set_const_inputs(std::vector<int> idx) {
    const_inputs_ = std::move(idx);
    return *this;
  }

  OpPattern Pattern(const Node& node) const { return pattern_fn_ ? pattern_fn_(node) : pattern_; }
  const FInferType& infer_type() const { return infer_type_; }
  const FCanonicalize& canonicalize() const { return canonicalize_; }
  const FFold& fold() const { return fold_; }
  const FCompute& compute() const { return compute_; }
  const FLoopKernel& loop_kernel() const { return loop_kernel_; }
  const FRunTimeIndices& runtime_indices() const { return runtime_indices_; }
  const FIsNoOp& is_no_op() const { return is_no_op_; }
  bool reshape_like() const { return reshape_like_; }
  bool has_compute() const { return static_cast<bool>(compute_); }
  int min_inputs() const { return min_inputs_; }
  int max_inputs() const { return max_inputs_; }
  const AttrMap& attr_defaults() const { return attr_defaults_; }
  const std::vector<int>& const_inputs() const { return const_inputs_; }

 private:
  std::string name_;
  OpPattern pattern_ = OpPattern::kOpaque;
  FPattern pattern_fn_;
  FInferType infer_type_;
  FCanonicalize canonicalize_;
  FFold fold_;
  FCompute compute_;
  FLoopKernel loop_kernel_;
  FRunTimeIndices runtime_indices_;
  FIsNoOp is_no_op_;
  bool reshape_like_ = false;
  int min_inputs_ = 0;
  int max_inputs_ = 1 << 20;
  AttrMap attr_defaults_;
  std::vector<int> const_inputs_;
};

/*! \brief Process-wide op table. Entries are created on first Mutable(); never removed. */
class OpRegistry {
 public:
  static OpRegistry* Global();

  /*! \brief The entry for `name`, created empty if absent. */
  OpDef& Mutable(const std::string& name);
  /*! \brief nullptr if unknown. */
  const OpDef* Find(const std::string& name) const;
  /*! \brief Sorted names of registered ops. */
  std::vector<std::string> Names() const;

 private:
  std::map<std::string, std::unique_ptr<OpDef>> ops_;
};

/*! \brief Run the registered shape rule of node.op; throws UnsupportedError for unknown ops. */
std::vector<TensorType> InferNodeTypes(const Node& node, const std::vector<TensorType>& inputs);

}  // namespace compiler
}  // namespace ember

#define EMBER_OP_CONCAT_IMPL(a, b) a##b
#define EMBER_OP_CONCAT(a, b) EMBER_OP_CONCAT_IMPL(a, b)

/*! \brief EMBER_REGISTER_OP("Relu").set_pattern(OpPattern::kElemWise).set_infer_type(...); */
#define EMBER_REGISTER_OP(OpName)                                              \
  static ::ember::compiler::OpDef& EMBER_OP_CONCAT(ember_op_reg_, __COUNTER__) \
      __attribute__((unused)) = ::ember::compiler::OpRegistry::Global()->Mutable(OpName)

/*! \brief Canonicalization side (compiler/transform/): EMBER_REGISTER_OP_CANONICALIZE("If", Fn); */
#define EMBER_REGISTER_OP_CANONICALIZE(OpName, Fn) EMBER_REGISTER_OP(OpName).set_canonicalize(Fn)

/*! \brief Kernel side: EMBER_REGISTER_OP_COMPUTE("Relu", ReluCompute); */
#define EMBER_REGISTER_OP_COMPUTE(OpName, Fn) EMBER_REGISTER_OP(OpName).set_compute(Fn)

#endif  // EMBER_COMPILER_IR_OP_REGISTRY_H_
