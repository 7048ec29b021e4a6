// Validates what libonnx's shape inference and emberc's lowering trust. The walk infers node by
// node with libonnx's own per-op inference functions, but only after the node's attributes passed
// the table below and its inputs' types their schema's constraints, so each node is checked against
// the real ranks, shapes and types of its inputs and inference never meets a bad attribute.
#include "frontend/onnx/onnx_validator.h"

#include <ember/compiler/ir/tensor_type.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "frontend/onnx/onnx_dtype.h"
#include "frontend/onnx/onnx_float_values.h"
#include "frontend/onnx/onnx_newer_opsets.h"

namespace ember {
namespace compiler {
namespace {

// How many values an INTS attribute must hold, given the rank r of the node's first input.
enum class Count { kAny, kSpatial /* r - 2 */, kTwiceSpatial /* 2(r - 2) */, kRank /* r */ };
// What each value must be.
enum class Range {
  kPositive,
  kNonNegative,
  kPermutation,  // of 0..r-1
  kAxes,         // distinct, in [-r, r)
  kNewAxes,      // Unsqueeze: distinct, in [-(r + n), r + n) for n axes
};
struct ListRule {
  const char* attr;
  Range range;
  Count count;
};
// Elements one tensor may hold (16 GiB of float32): no edge model comes near it, and libonnx's
// shape inference loops in proportion to a dim (Conv/Pool SAME padding subtracts the stride until
// the dim is used up: a dim of 2^40 held emberc for hours), so a larger shape is refused first.
constexpr int64_t kMaxTensorElements = int64_t{1} << 32;

// The largest size-like attribute (a stride, a window, a pad, a block size, a group): more than
// any dim a tensor may have, and small enough that libonnx's products of two (DepthToSpace's
// blocksize squared, a window times its dilation) cannot overflow: blocksize 2^40 squared wrapped
// to 0 and libonnx divided by it (SIGFPE).
constexpr int64_t kMaxSizeAttribute = (int64_t{1} << 31) - 1;

// Range of an INT `axis` attribute: [-r, r), or [-r, r] where an axis names a split point.
enum class Axis { kNone, kInRank, kSplitPoint };
// Ranks the node's inputs must have.
enum class Ranks {
  kAny,
  kSpatial,            // input 0 is (N, C, spatial...): rank >= 3
  kSpatialWithWeight,  // and the weight (OpRules::weight_input) has the same rank as input 0
  kEqual,              // every input has one rank (Concat)
};
// What a sliding window must satisfy, checked where the shapes are static.
enum class Window {
  kNone,
  kWeight,  // 'kernel_shape', when given, is the weight's spatial shape (ConvTranspose)
  kFits,    // and the dilated kernel fits the padded input (Conv: no empty output)
  kPool,    // each pad is smaller than 'kernel_shape' (ONNX Runtime refuses others)
};
struct OpRules {
  std::vector<const char*> ops;
  std::vector<ListRule> lists;
  std::vector<const char*> positive_ints;  // INT attributes inference divides by
  Axis axis = Axis::kNone;
  Ranks ranks = Ranks::kAny;
  Window window = Window::kNone;
  int weight_input = 1;
  std::vector<const char*> non_negative_ints = {};  // INT attributes inference sizes vectors with
};

const std::vector<ListRule> kConvLists = {
    {"strides", Range::kPositive, Count::kSpatial},
    {"dilations", Range::kPositive, Count::kSpatial},
    {"kernel_shape", Range::kPositive, Count::kSpatial},
    {"pads", Range::kNonNegative, Count::kTwiceSpatial},
    {"output_padding", Range::kNonNegative, Count::kSpatial},
    {"output_shape", Range::kPositive, Count::kSpatial},
};

// Every op with an attribute libonnx's inference divides by or indexes with.
const std::vector<OpRules>& RuleTable() {
  static const std::vector<OpRules> table = {
      {{"Conv", "ConvInteger"},
       kConvLists,
       {"group"},
       Axis::kNone,
       Ranks::kSpatialWithWeight,
       Window::kFits},
      {{"QLinearConv"},
       kConvLists,
       {"group"},
       Axis::kNone,
       Ranks::kSpatialWithWeight,
       Window::kFits,
       3},
      {{"ConvTranspose"},
       kConvLists,
       {"group"},
       Axis::kNone,
       Ranks::kSpatialWithWeight,
       Window::kWeight},
      {{"MaxPool", "AveragePool", "LpPool"},
       kConvLists,
       {},
       Axis::kNone,
       Ranks::kSpatial,
       Window::kPool},
      {{"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "QLinearGlobalAveragePool"},
       {},
       {},
       Axis::kNone,
       Ranks::kSpatial},
      {{"Transpose"}, {{"perm", Range::kPermutation, Count::kRank}}, {}, Axis::kNone, Ranks::kAny},
      {{"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
        "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Squeeze"},
       {{"axes", Range::kAxes, Count::kAny}},
       {},
       Axis::kNone,
       Ranks::kAny},
      {{"Unsqueeze"}, {{"axes", Range::kNewAxes, Count::kAny}}, {}, Axis::kNone, Ranks::kAny},
      {{"ArgMax", "ArgMin", "Gather", "GatherElements", "Softmax", "LogSoftmax", "Hardmax",
        "Compress"},
       {},
       {},
       Axis::kInRank,
       Ranks::kAny},
      {{"Split"}, {{"split", Range::kNonNegative, Count::kAny}}, {}, Axis::kInRank, Ranks::kAny},
      {{"Concat"}, {}, {}, Axis::kInRank, Ranks::kEqual},
      {{"Flatten"}, {}, {}, Axis::kSplitPoint, Ranks::kAny},
      {{"DepthToSpace", "SpaceToDepth"}, {}, {"blocksize"}, Axis::kNone, Ranks::kAny},
      {{"LRN"}, {}, {"size"}, Axis::kNone, Ranks::kAny},
      {{"GatherND"}, {}, {}, Axis::kNone, Ranks::kAny, Window::kNone, 1, {"batch_dims"}},
  };
  return table;
}

// STRING attributes whose values ONNX enumerates, where the lowering would read another value as
// the default or the other branch of a comparison (a BitShift "SIDEWAYS" shifting right). Pad's,
// Resize's and the recurrent ops' modes are refused where they are read.
struct StringRule {
  std::vector<const char*> ops;
  const char* attr;
  std::vector<const char*> values;
};
const std::vector<StringRule>& StringRules() {
  static const std::vector<StringRule> rules = {
      {{"Conv", "ConvInteger", "QLinearConv", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"},
       "auto_pad",
       {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}},
      {{"BitShift"}, "direction", {"LEFT", "RIGHT"}},
      {{"DepthToSpace"}, "mode", {"DCR", "CRD"}},
      {{"Gelu"}, "approximate", {"none", "tanh"}},
  };
  return rules;
}

// ONNX Runtime's com.microsoft quantized ops, which libonnx has no schema for: their formal inputs
// in order, "?" marking an optional one. The 8-bit ones (X, its zero point) share one type, int8
// or uint8; every scale and zero point is a scalar, each scale float.
struct ContribQuantizedOp {
  const char* op;
  std::vector<const char*> inputs;
};
const std::vector<ContribQuantizedOp>& ContribQuantizedOps() {
  static const std::vector<ContribQuantizedOp> ops = {
      {"QLinearAdd",
       {"A", "A_scale", "A_zero_point?", "B", "B_scale", "B_zero_point?", "C_scale",
        "C_zero_point?"}},
      {"QLinearMul",
       {"A", "A_scale", "A_zero_point?", "B", "B_scale", "B_zero_point?", "C_scale",
        "C_zero_point?"}},
      {"QLinearSigmoid", {"X", "X_scale", "X_zero_point?", "Y_scale", "Y_zero_point?"}},
      {"QLinearGlobalAveragePool", {"x", "x_scale", "x_zero_point", "y_scale", "y_zero_point"}},
  };
  return ops;
}

const OpRules* FindRules(const std::string& op) {
  static const auto* by_op = [] {
    auto* m = new std::unordered_map<std::string, const OpRules*>;
    for (const OpRules& r : RuleTable()) {
      for (const char* o : r.ops) (*m)[o] = &r;
    }
    return m;
  }();
  auto it = by_op->find(op);
  return it == by_op->end() ? nullptr : it->second;
}

const onnx::AttributeProto* FindAttr(const onnx::NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

// An INTS attribute (already checked to be one), or `fallback` when the node has none.
std::vector<int64_t> IntsAttr(const onnx::NodeProto& n, const std::string& name,
                              std::vector<int64_t> fallback) {
  const onnx::AttributeProto* a = FindAttr(n, name);
  if (!a) return fallback;
  return std::vector<int64_t>(a->ints().begin(), a->ints().end());
}

// The ONNX name of an element type ("uint8"), or its number where libonnx names none.
std::string ElemTypeName(int32_t elem) {
  try {
    return onnx::Utils::DataTypeUtils::ToDataTypeString(elem);
  } catch (const std::exception&) {
    return "element type " + std::to_string(elem);
  }
}

// "a, b or c" (last = " or "), or "a, b, c" (last = ", ").
std::string JoinNames(const std::vector<std::string>& names, const char* last) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    out += (i == 0 ? "" : i + 1 == names.size() ? last : ", ") + names[i];
  }
  return out;
}

// "tensor(int8) or tensor(uint8)": the types a formal parameter allows, sorted for a stable
// message.
std::string AllowedTypes(const onnx::OpSchema::FormalParameter& formal) {
  std::vector<std::string> names;
  for (onnx::DataType t : formal.GetTypes()) names.push_back(*t);
  std::sort(names.begin(), names.end());
  return JoinNames(names, " or ");
}

// Element size in bytes; the widest ONNX type (complex128) for types emberc does not map.
int64_t ElementBytes(int32_t elem_type) {
  constexpr int64_t kWidestElementBytes = 16;
  try {
    DLDataType t = OnnxToDType(elem_type, "");
    return (t.bits * t.lanes + 7) / 8;
  } catch (const CompileError&) {
    return kWidestElementBytes;
  }
}

// How many values a tensor's typed field holds per element (complex numbers: two), and the
// field's size in t, for the element types ONNX stores outside raw_data.
struct TypedField {
  int per_element;
  int size;
};

TypedField TypedFieldOf(const onnx::TensorProto& t) {
  using T = onnx::TensorProto;
  switch (t.data_type()) {
    case T::FLOAT:
      return {1, t.float_data_size()};
    case T::COMPLEX64:
      return {2, t.float_data_size()};
    case T::DOUBLE:
      return {1, t.double_data_size()};
    case T::COMPLEX128:
      return {2, t.double_data_size()};
    case T::INT64:
      return {1, t.int64_data_size()};
    case T::UINT32:
    case T::UINT64:
      return {1, t.uint64_data_size()};
    case T::STRING:
      return {1, t.string_data_size()};
    default:  // the 8- and 16-bit types, int32, bool
      return {1, t.int32_data_size()};
  }
}

// A constant's data must be as large as its dims say before libonnx reads it (its ParseData
// copies dims' worth of bytes from raw_data whatever raw_data holds).
void CheckTensorPayload(const onnx::TensorProto& t, const std::string& where,
                        const std::string& what) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) return;  // read and checked elsewhere
  int64_t elements = 1;
  for (int64_t d : t.dims()) elements *= d;  // CheckSize bounded the product
  std::string dims;
  for (int64_t d : t.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
  if (t.has_raw_data()) {
    const int64_t want = elements * ElementBytes(t.data_type());
    if (t.data_type() != onnx::TensorProto::STRING &&
        static_cast<int64_t>(t.raw_data().size()) != want) {
      throw CompileError(where + ": " + what + " holds " + std::to_string(t.raw_data().size()) +
                         " bytes of raw_data, expected " + std::to_string(want) + " for dims [" +
                         dims + "]");
    }
    return;
  }
  const TypedField field = TypedFieldOf(t);
  if (field.size != elements * field.per_element) {
    throw CompileError(where + ": " + what + " holds " + std::to_string(field.size) +
                       " values, expected " + std::to_string(elements * field.per_element) +
                       " for dims [" + dims + "]");
  }
}

// Types and constant values in scope while walking one graph (a subgraph sees its parents').
class Scope {
 public:
  Scope() = default;
  Scope(const Scope& parent) : types_(parent.types_), constants_(parent.constants_) {
    for (auto& [name, type] : types_) pointers_[name] = &type;
  }
  Scope& operator=(const Scope&) = delete;

  void SetType(const std::string& name, const onnx::TypeProto& type) {
    onnx::TypeProto& slot = types_[name];  // unordered_map nodes never move: pointers stay valid
    slot = type;
    pointers_[name] = &slot;
  }
  void SetConstant(const std::string& name, const onnx::TensorProto* t) { constants_[name] = t; }

  // Rank of a value whose shape is known.
  std::optional<int64_t> Rank(const std::string& name) const {
    auto it = types_.find(name);
    if (it == types_.end() || !it->second.has_tensor_type() ||
        !it->second.tensor_type().has_shape()) {
      return std::nullopt;
    }
    return it->second.tensor_type().shape().dim_size();
  }
  // Shape of a value whose every dimension is known.
  std::optional<std::vector<int64_t>> StaticShape(const std::string& name) const {
    if (!Rank(name)) return std::nullopt;
    std::vector<int64_t> dims;
    for (const auto& d : types_.at(name).tensor_type().shape().dim()) {
      if (!d.has_dim_value()) return std::nullopt;
      dims.push_back(d.dim_value());
    }
    return dims;
  }
  // Element type of a tensor value, when known.
  const onnx::TypeProto* TensorType(const std::string& name) const {
    auto it = types_.find(name);
    if (it == types_.end() || !it->second.has_tensor_type() ||
        it->second.tensor_type().elem_type() == onnx::TensorProto::UNDEFINED) {
      return nullptr;
    }
    return &it->second;
  }
  const std::unordered_map<std::string, onnx::TypeProto*>& pointers() const { return pointers_; }
  const std::unordered_map<std::string, const onnx::TensorProto*>& constants() const {
    return constants_;
  }

 private:
  std::unordered_map<std::string, onnx::TypeProto> types_;
  std::unordered_map<std::string, onnx::TypeProto*> pointers_;
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
};

class Validator {
 public:
  Validator(int64_t opset, const std::string& source) : opset_(opset), source_(source) {}

  void ValidateGraph(const onnx::GraphProto& g, Scope* scope) {
    for (const auto& t : g.initializer()) {
      onnx::TypeProto type;
      type.mutable_tensor_type()->set_elem_type(t.data_type());
      for (int64_t d : t.dims())
        type.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
      CheckSize(source_, "initializer '" + t.name() + "'", type);
      CheckTensorPayload(t, source_, "initializer '" + t.name() + "'");
      scope->SetType(t.name(), type);
      scope->SetConstant(t.name(), &t);
    }
    for (const auto& in : g.input()) {
      if (scope->constants().count(in.name())) continue;
      CheckSize(source_, "input '" + in.name() + "'", in.type());
      scope->SetType(in.name(), in.type());
    }
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& n = g.node(i);
      std::string where = source_ + ": node " +
                          (n.name().empty() ? "#" + std::to_string(i) : "'" + n.name() + "'") +
                          " (" + n.op_type() + ")";
      CheckArity(n, where);
      if (const OpRules* rules = FindRules(n.op_type())) {
        CheckNode(n, *rules, *scope, where);
        CheckWindow(n, *rules, *scope, where);
      }
      if (n.domain() == "com.microsoft") CheckContribQuantized(n, *scope, where);
      CheckAttributeValues(n, *scope, where);
      CheckAxisAttributes(n, *scope, where);
      CheckResizeScales(n, *scope, where);
      for (const auto& a : n.attribute()) {
        if (a.has_g()) {
          Scope inner(*scope);
          ValidateGraph(a.g(), &inner);
        }
        for (const auto& sub : a.graphs()) {
          Scope inner(*scope);
          ValidateGraph(sub, &inner);
        }
      }
      InferNode(n, scope, where);
    }
  }

 private:
  [[noreturn]] void Fail(const std::string& where, const std::string& what) const {
    throw CompileError(where + ": " + what);
  }

  void CheckNode(const onnx::NodeProto& n, const OpRules& rules, const Scope& scope,
                 const std::string& where) const {
    std::optional<int64_t> rank;
    std::string first_input;
    if (n.input_size() > 0 && !n.input(0).empty()) {
      first_input = n.input(0);
      rank = scope.Rank(first_input);
    }
    CheckRanks(n, rules, scope, rank, where);
    for (const ListRule& rule : rules.lists) {
      if (const onnx::AttributeProto* a = FindAttr(n, rule.attr)) {
        CheckList(*a, rule, rank, first_input, where);
      }
    }
    auto check_int = [&](const char* name, int64_t low, const char* what) {
      const onnx::AttributeProto* a = FindAttr(n, name);
      if (!a) return;
      const std::string attr = std::string("attribute '") + name + "'";
      if (a->type() != onnx::AttributeProto::INT) Fail(where, attr + " must be an int");
      if (a->i() < low) Fail(where, attr + " must be " + what + ", got " + std::to_string(a->i()));
      if (a->i() > kMaxSizeAttribute) {
        Fail(where, attr + " must be at most " + std::to_string(kMaxSizeAttribute) + ", got " +
                        std::to_string(a->i()));
      }
    };
    for (const char* name : rules.positive_ints) check_int(name, 1, "positive");
    for (const char* name : rules.non_negative_ints) check_int(name, 0, "non-negative");
    if (rules.axis != Axis::kNone) {
      const onnx::AttributeProto* a = FindAttr(n, "axis");
      if (!a) return;
      if (a->type() != onnx::AttributeProto::INT) Fail(where, "attribute 'axis' must be an int");
      if (!rank) return;
      int64_t high = rules.axis == Axis::kSplitPoint ? *rank : *rank - 1;
      if (a->i() < -*rank || a->i() > high) {
        Fail(where, "attribute 'axis' must be in [" + std::to_string(-*rank) + ", " +
                        std::to_string(high) + "] for input '" + first_input + "' of rank " +
                        std::to_string(*rank) + ", got " + std::to_string(a->i()));
      }
    }
  }

  void CheckRanks(const onnx::NodeProto& n, const OpRules& rules, const Scope& scope,
                  std::optional<int64_t> rank, const std::string& where) const {
    const Ranks ranks = rules.ranks;
    if (ranks == Ranks::kAny || !rank) return;
    if (ranks == Ranks::kEqual) {
      for (const auto& in : n.input()) {
        std::optional<int64_t> r = scope.Rank(in);
        if (r && *r != *rank) {
          Fail(where, "every input must have the rank of input '" + n.input(0) + "' (" +
                          std::to_string(*rank) + "), but '" + in + "' has rank " +
                          std::to_string(*r));
        }
      }
      return;
    }
    constexpr int64_t kMinSpatialRank = 3;  // N, C and at least one spatial axis
    if (*rank < kMinSpatialRank) {
      Fail(where, "input '" + n.input(0) + "' must have rank >= 3 (N, C, spatial axes...), got " +
                      std::to_string(*rank));
    }
    if (ranks != Ranks::kSpatialWithWeight || n.input_size() <= rules.weight_input) return;
    const std::string& weight = n.input(rules.weight_input);
    std::optional<int64_t> weight_rank = scope.Rank(weight);
    if (weight_rank && *weight_rank != *rank) {
      Fail(where, "weight '" + weight + "' must have the rank of input '" + n.input(0) + "' (" +
                      std::to_string(*rank) + "), got " + std::to_string(*weight_rank));
    }
  }

  // The window against the weight and the input, where their shapes are static (the kernels and
  // the int8 planners divide by output sizes these keep positive).
  void CheckWindow(const onnx::NodeProto& n, const OpRules& rules, const Scope& scope,
                   const std::string& where) const {
    if (rules.window == Window::kNone) return;
    const std::vector<int64_t> kernel = IntsAttr(n, "kernel_shape", {});
    const onnx::AttributeProto* auto_pad = FindAttr(n, "auto_pad");
    const bool explicit_pads = !auto_pad || auto_pad->s() == "NOTSET";
    if (rules.window == Window::kPool) {
      const std::vector<int64_t> pads = IntsAttr(n, "pads", {});
      for (size_t i = 0; explicit_pads && i < pads.size() && !kernel.empty(); ++i) {
        if (pads[i] >= kernel[i % kernel.size()]) {
          Fail(where, "attribute 'pads' " + ShapeToString(pads) +
                          " must be smaller than 'kernel_shape' " + ShapeToString(kernel) +
                          " on each axis");
        }
      }
      return;
    }
    if (n.input_size() <= rules.weight_input) return;
    const std::string& weight = n.input(rules.weight_input);
    const std::optional<std::vector<int64_t>> w = scope.StaticShape(weight);
    if (!w || w->size() < 3) return;
    const std::vector<int64_t> spans(w->begin() + 2, w->end());
    if (!kernel.empty() && kernel != spans) {
      Fail(where, "attribute 'kernel_shape' " + ShapeToString(kernel) +
                      " must be the spatial shape of weight '" + weight + "' " + ShapeToString(*w));
    }
    const std::optional<std::vector<int64_t>> x = scope.StaticShape(n.input(0));
    if (rules.window != Window::kFits || !x || x->size() != w->size()) return;
    if (!explicit_pads && auto_pad->s() != "VALID") return;  // SAME_*: never empty
    const size_t sp = spans.size();
    const std::vector<int64_t> pads = explicit_pads
                                          ? IntsAttr(n, "pads", std::vector<int64_t>(2 * sp, 0))
                                          : std::vector<int64_t>(2 * sp, 0);
    const std::vector<int64_t> dilations = IntsAttr(n, "dilations", std::vector<int64_t>(sp, 1));
    for (size_t i = 0; i < sp; ++i) {
      const int64_t padded = (*x)[2 + i] + pads[i] + pads[sp + i];
      if (padded < (spans[i] - 1) * dilations[i] + 1) {
        Fail(where, "weight '" + weight + "' " + ShapeToString(*w) + " with dilations " +
                        ShapeToString(dilations) + " spans more than input '" + n.input(0) + "' " +
                        ShapeToString(*x) + " padded by " + ShapeToString(pads) +
                        ": the output would be empty");
      }
    }
  }

  // Enumerated STRING attributes, and Mod's fmod, which ONNX requires for floating-point inputs.
  void CheckAttributeValues(const onnx::NodeProto& n, const Scope& scope,
                            const std::string& where) const {
    for (const StringRule& rule : StringRules()) {
      if (std::find(rule.ops.begin(), rule.ops.end(), n.op_type()) == rule.ops.end()) continue;
      const onnx::AttributeProto* a = FindAttr(n, rule.attr);
      if (!a) continue;
      const std::vector<std::string> allowed(rule.values.begin(), rule.values.end());
      if (a->type() != onnx::AttributeProto::STRING ||
          std::find(allowed.begin(), allowed.end(), a->s()) == allowed.end()) {
        Fail(where, std::string("attribute '") + rule.attr + "' must be one of " +
                        JoinNames(allowed, ", ") + ", got '" + a->s() + "'");
      }
    }
    if (n.op_type() != "Mod" || n.input_size() == 0) return;
    const onnx::AttributeProto* fmod = FindAttr(n, "fmod");
    const onnx::TypeProto* t = scope.TensorType(n.input(0));
    const int32_t elem = t ? t->tensor_type().elem_type() : onnx::TensorProto::UNDEFINED;
    const bool floating = elem == onnx::TensorProto::FLOAT || elem == onnx::TensorProto::DOUBLE ||
                          elem == onnx::TensorProto::FLOAT16 || elem == onnx::TensorProto::BFLOAT16;
    if (floating && (!fmod || fmod->i() != 1)) {
      Fail(where, "attribute 'fmod' must be 1 for " + ElemTypeName(elem) + " inputs, got " +
                      std::to_string(fmod ? fmod->i() : 0));
    }
  }

  // Resize's and Upsample's scales, from an attribute or a constant input: libonnx multiplies each
  // input dimension by its scale and casts the product to an integer (NaN, inf and 1e30 became
  // dimensions of -2^63 there, a cast C++ leaves undefined). Each must be a finite number > 0 and
  // at most kMaxScale, so that no product of a dimension (at most 2^32) and a scale overflows;
  // the output's size is checked after inference as every value's is.
  void CheckResizeScales(const onnx::NodeProto& n, const Scope& scope,
                         const std::string& where) const {
    if (n.op_type() != "Resize" && n.op_type() != "Upsample") return;
    std::vector<float> scales;
    if (const onnx::AttributeProto* a = FindAttr(n, "scales")) {
      scales.assign(a->floats().begin(), a->floats().end());
    }
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset_), "");
    for (int i = 0; schema && i < n.input_size() && i < static_cast<int>(schema->inputs().size());
         ++i) {
      if (schema->inputs()[static_cast<size_t>(i)].GetName() != "scales") continue;
      auto it = scope.constants().find(n.input(i));
      if (it != scope.constants().end() && it->second->data_type() == onnx::TensorProto::FLOAT) {
        scales = Float32Values(*it->second);
      }
    }
    for (size_t k = 0; k < scales.size(); ++k) {
      constexpr float kMaxScale = 1 << 20;
      if (!std::isfinite(scales[k]) || scales[k] <= 0 || scales[k] > kMaxScale) {
        char got[32];
        std::snprintf(got, sizeof(got), "%g", static_cast<double>(scales[k]));
        Fail(where, "scales[" + std::to_string(k) + "] must be a number in (0, " +
                        std::to_string(static_cast<int64_t>(kMaxScale)) + "], got " + got);
      }
    }
  }

  // Every ONNX op's `axis` and `*_axis` INT attributes (those the rule table checks per op and the
  // rest: LayerNormalization, QuantizeLinear, ReverseSequence, ...) within the first input's rank
  // r: [-r, r - 1], or one wider where the axis may name the position past the last (Flatten's
  // split point [-r, r], OneHot's new axis [-r - 1, r]). libonnx's inference narrows an axis to
  // int and indexes dims with it (LayerNormalization's axis 2^31 became -2^31, and -4 of a rank-3
  // input -1: SIGSEGV both).
  void CheckAxisAttributes(const onnx::NodeProto& n, const Scope& scope,
                           const std::string& where) const {
    // Other domains' first inputs need not be the data (QLinearConcat's is a scale).
    if (!n.domain().empty() && n.domain() != "ai.onnx") return;
    std::optional<int64_t> rank;
    if (n.input_size() > 0 && !n.input(0).empty()) rank = scope.Rank(n.input(0));
    // A scalar's axis names nothing; 0 and -1 stay allowed (a per-tensor DequantizeLinear of a
    // scalar may still carry axis 0).
    const int64_t r = rank ? std::max<int64_t>(*rank, 1) : kMaxSizeAttribute;
    const bool one_hot = n.op_type() == "OneHot";
    const int64_t low = one_hot ? -r - 1 : -r;
    const int64_t high = one_hot || n.op_type() == "Flatten" ? r : r - 1;
    for (const auto& a : n.attribute()) {
      const std::string& name = a.name();
      const bool axis =
          name == "axis" || (name.size() > 5 && name.rfind("_axis") == name.size() - 5);
      if (!axis || a.type() != onnx::AttributeProto::INT) continue;
      if (a.i() < low || a.i() > high) {
        Fail(where, "attribute '" + name + "' must be in [" + std::to_string(low) + ", " +
                        std::to_string(high) + "]" +
                        (rank ? " for input '" + n.input(0) + "' of rank " + std::to_string(*rank)
                              : std::string()) +
                        ", got " + std::to_string(a.i()));
      }
    }
    if (n.op_type() == "Scan") {
      // libonnx sizes vectors by it (2^40 threw std::bad_alloc from its inference).
      const onnx::AttributeProto* scans = FindAttr(n, "num_scan_inputs");
      if (scans && (scans->i() < 1 || scans->i() > n.input_size())) {
        Fail(where, "attribute 'num_scan_inputs' must be in [1, " + std::to_string(n.input_size()) +
                        "] (the node's inputs), got " + std::to_string(scans->i()));
      }
    }
  }

  // A com.microsoft quantized op's inputs: their count, the 8-bit ones' one type, scalar
  // parameters (the expansion reads them as one value each).
  void CheckContribQuantized(const onnx::NodeProto& n, const Scope& scope,
                             const std::string& where) const {
    const auto& ops = ContribQuantizedOps();
    auto op = std::find_if(ops.begin(), ops.end(),
                           [&](const ContribQuantizedOp& o) { return n.op_type() == o.op; });
    if (op == ops.end()) return;
    const int count = static_cast<int>(op->inputs.size());
    int required = count;
    while (required > 0 && std::string(op->inputs[required - 1]).back() == '?') --required;
    const std::string formals =
        JoinNames(std::vector<std::string>(op->inputs.begin(), op->inputs.end()), ", ");
    if (n.input_size() < required || n.input_size() > count || n.output_size() != 1) {
      Fail(where, std::string(op->op) + " takes " + std::to_string(required) + " to " +
                      std::to_string(count) + " inputs (" + formals + ") and one output, got " +
                      std::to_string(n.input_size()) + " and " + std::to_string(n.output_size()));
    }
    std::string first_8bit;
    int32_t bound = onnx::TensorProto::UNDEFINED;
    for (int i = 0; i < n.input_size(); ++i) {
      std::string formal = op->inputs[i];
      if (formal.back() == '?') formal.pop_back();
      if (n.input(i).empty()) {
        if (op->inputs[i] == formal) Fail(where, "input " + formal + " is required");
        continue;
      }
      const std::string what = "input '" + n.input(i) + "' (" + formal + ")";
      const bool scale = formal.size() > 6 && formal.compare(formal.size() - 6, 6, "_scale") == 0;
      const bool zero_point = formal.find("zero_point") != std::string::npos;
      if (scale || zero_point) {
        std::optional<std::vector<int64_t>> shape = scope.StaticShape(n.input(i));
        int64_t elements = 1;
        for (int64_t d : shape.value_or(std::vector<int64_t>{})) elements *= d;
        if (shape && elements != 1) {
          Fail(where, what + " must be a scalar, got shape " + ShapeToString(*shape));
        }
      }
      const onnx::TypeProto* t = scope.TensorType(n.input(i));
      if (!t) continue;
      const int32_t elem = t->tensor_type().elem_type();
      const std::string got = ElemTypeName(elem);
      if (scale) {
        if (elem != onnx::TensorProto::FLOAT) Fail(where, what + " must be float, got " + got);
        continue;
      }
      if (elem != onnx::TensorProto::INT8 && elem != onnx::TensorProto::UINT8) {
        Fail(where, what + " must be int8 or uint8, got " + got);
      }
      if (bound == onnx::TensorProto::UNDEFINED) {
        bound = elem;
        first_8bit = n.input(i);
      } else if (elem != bound) {
        Fail(where, what + " must have the type of input '" + first_8bit + "', " +
                        ElemTypeName(bound) + ", got " + got);
      }
    }
  }

  // Each input's type against its formal parameter's constraint at the model's opset, one type per
  // constraint across the inputs bound to it, as ONNX Runtime checks a model when it loads it:
  // the lowering takes an operand's type on trust (an int32 QLinearConv weight, a zero point whose
  // type is not its tensor's).
  void CheckOperandTypes(const onnx::NodeProto& n, const onnx::OpSchema& schema, const Scope& scope,
                         bool check_sets, const std::string& where) const {
    const auto& formals = schema.inputs();
    std::unordered_map<std::string, std::pair<std::string, onnx::DataType>> bound;
    for (int i = 0; i < n.input_size() && !formals.empty(); ++i) {
      const bool past = i >= static_cast<int>(formals.size());
      const auto& formal = formals[past ? formals.size() - 1 : static_cast<size_t>(i)];
      if (past && formal.GetOption() != onnx::OpSchema::Variadic) return;
      const onnx::TypeProto* t = n.input(i).empty() ? nullptr : scope.TensorType(n.input(i));
      if (!t) continue;
      onnx::DataType type = nullptr;
      try {
        type = onnx::Utils::DataTypeUtils::ToType(*t);
      } catch (const std::exception&) {
        continue;  // an element type libonnx does not name: the importer's own check reports it
      }
      const std::string what = "input '" + n.input(i) + "' (" + formal.GetName() + ")";
      if (check_sets && !formal.GetTypes().empty() && !formal.GetTypes().count(type)) {
        Fail(where, what + " must be " + AllowedTypes(formal) + ", got " + *type);
      }
      if (!formal.GetIsHomogeneous()) continue;
      auto [it, fresh] = bound.emplace(formal.GetTypeStr(), std::make_pair(n.input(i), type));
      if (!fresh && it->second.second != type) {
        Fail(where, what + " must have the type of input '" + it->second.first + "', " +
                        *it->second.second + ", got " + *type);
      }
    }
  }

  void CheckList(const onnx::AttributeProto& a, const ListRule& rule, std::optional<int64_t> rank,
                 const std::string& input, const std::string& where) const {
    std::string name = "attribute '" + a.name() + "'";
    if (a.type() != onnx::AttributeProto::INTS) Fail(where, name + " must be a list of ints");
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    std::string of_input =
        rank ? " for input '" + input + "' of rank " + std::to_string(*rank) : std::string();
    if (rank && rule.count != Count::kAny) {
      int64_t want = rule.count == Count::kRank      ? *rank
                     : rule.count == Count::kSpatial ? *rank - 2
                                                     : 2 * (*rank - 2);
      if (static_cast<int64_t>(v.size()) != want) {
        Fail(where, name + " must hold " + std::to_string(want) + " values" + of_input + ", got " +
                        std::to_string(v.size()) + ": " + ShapeToString(v));
      }
    }
    switch (rule.range) {
      case Range::kPositive:
      case Range::kNonNegative: {
        int64_t low = rule.range == Range::kPositive ? 1 : 0;
        for (int64_t x : v) {
          if (x < low) {
            Fail(where, name + " must be " + (low ? "positive" : "non-negative") + ", got " +
                            ShapeToString(v));
          }
          if (x > kMaxSizeAttribute) {
            Fail(where, name + " must be at most " + std::to_string(kMaxSizeAttribute) + ", got " +
                            ShapeToString(v));
          }
        }
        return;
      }
      case Range::kPermutation: {
        int64_t n = static_cast<int64_t>(v.size());
        std::vector<bool> seen(v.size(), false);
        for (int64_t x : v) {
          if (x < 0 || x >= n || seen[x]) {
            Fail(where, name + " must be a permutation of 0.." + std::to_string(n - 1) + of_input +
                            ", got " + ShapeToString(v));
          }
          seen[x] = true;
        }
        return;
      }
      case Range::kAxes:
      case Range::kNewAxes: {
        std::optional<int64_t> r = rank;
        if (r && rule.range == Range::kNewAxes) *r += static_cast<int64_t>(v.size());
        CheckAxes(v, r, name, of_input, where);
        return;
      }
    }
  }

  void CheckAxes(const std::vector<int64_t>& v, std::optional<int64_t> rank,
                 const std::string& name, const std::string& of_input,
                 const std::string& where) const {
    std::vector<int64_t> normalized;
    for (int64_t x : v) {
      if (rank && (x < -*rank || x >= *rank)) {
        Fail(where, name + " must hold axes in [" + std::to_string(-*rank) + ", " +
                        std::to_string(*rank - 1) + "]" + of_input + ", got " + ShapeToString(v));
      }
      int64_t axis = rank && x < 0 ? x + *rank : x;
      if (std::find(normalized.begin(), normalized.end(), axis) != normalized.end()) {
        Fail(where, name + " must not repeat an axis, got " + ShapeToString(v));
      }
      normalized.push_back(axis);
    }
  }

  // A static shape must have no negative dim and at most kMaxTensorElements elements.
  void CheckSize(const std::string& where, const std::string& what,
                 const onnx::TypeProto& type) const {
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) return;
    const auto& shape = type.tensor_type().shape();
    std::vector<int64_t> dims;
    for (const auto& d : shape.dim()) {
      if (!d.has_dim_value()) return;
      dims.push_back(d.dim_value());
    }
    int64_t elements = 1;
    bool overflow = false;
    for (int64_t d : dims) {
      if (d < 0) {
        Fail(where,
             what + " would have shape " + ShapeToString(dims) + "; every dimension must be >= 0");
      }
      if (d != 0 && elements > std::numeric_limits<int64_t>::max() / d) overflow = true;
      if (!overflow) elements *= d;
    }
    if (overflow || elements > kMaxTensorElements) {
      Fail(where, what + " of shape " + ShapeToString(dims) + " is too large: " +
                      (overflow ? std::string("its element count overflows 64 bits")
                                : std::to_string(elements) + " elements") +
                      ", expected at most " + std::to_string(kMaxTensorElements) + " (2^32)");
    }
  }

  // The node's input and output counts against its schema, and none of its required inputs
  // left empty: past opset 17 libonnx's checker does not run, and canonicalization reads a
  // required input (Reshape's shape) without asking whether it is there. A schema older than the
  // model's opset (the op changed after libonnx's last) bounds the counts from below only: newer
  // versions add optional inputs and outputs.
  void CheckArity(const onnx::NodeProto& n, const std::string& where) const {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset_), "");
    if (!schema) {
      CheckNewerOpArity(n, where);
      return;
    }
    const bool current = LibonnxKnowsOp(n.op_type(), opset_);
    CheckCount(where, "inputs", n.input_size(), schema->min_input(),
               current ? schema->max_input() : std::numeric_limits<int>::max());
    CheckCount(where, "outputs", n.output_size(), schema->min_output(),
               current ? schema->max_output() : std::numeric_limits<int>::max());
    const auto& formals = schema->inputs();
    for (int i = 0; i < n.input_size() && i < static_cast<int>(formals.size()); ++i) {
      if (n.input(i).empty() && formals[i].GetOption() == onnx::OpSchema::Single) {
        Fail(where, "input " + std::to_string(i) + " (" + formals[i].GetName() +
                        ") is required, got none (an empty name)");
      }
    }
  }

  // The same for an op newer than libonnx, from Ember's own table of their signatures.
  void CheckNewerOpArity(const onnx::NodeProto& n, const std::string& where) const {
    const NewerOpSignature* sig = NewerOpSignatureOf(n.op_type());
    if (!sig) return;
    CheckCount(where, "inputs", n.input_size(), sig->required_inputs,
               static_cast<int>(sig->inputs.size()));
    CheckCount(where, "outputs", n.output_size(), 1, sig->max_outputs);
    for (int i = 0; i < sig->required_inputs; ++i) {
      if (n.input(i).empty()) {
        Fail(where, "input " + std::to_string(i) + " (" + sig->inputs[static_cast<size_t>(i)] +
                        ") is required, got none (an empty name)");
      }
    }
  }

  void CheckCount(const std::string& where, const std::string& what, int got, int min,
                  int max) const {
    if (got >= min && got <= max) return;
    const std::string want = min == max ? std::to_string(min)
                             : max == std::numeric_limits<int>::max()
                                 ? "at least " + std::to_string(min)
                                 : std::to_string(min) + " to " + std::to_string(max);
    Fail(where, "takes " + want + " " + what + ", got " + std::to_string(got));
  }

  // Runs libonnx's inference for one node that passed the checks, so later nodes see its ranks.
  // Failures here are left for the checker and the full inference pass, which explain them.
  void InferNode(const onnx::NodeProto& n, Scope* scope, const std::string& where) const {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return;
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(n.op_type(), static_cast<int>(opset_), "");
    if (!schema) return;
    // Past libonnx's opsets its schema is an older version's, whose type sets a newer version
    // widens (float8, int4, ...) but whose inputs bound to one type stay bound.
    const bool known = LibonnxKnowsOp(n.op_type(), opset_);
    CheckOperandTypes(n, *schema, *scope, known, where);
    if (!known || LibonnxMisreadsNode(n) || !schema->has_type_and_shape_inference_function()) {
      return;
    }
    onnx::NodeProto copy = n;
    try {
      schema->Verify(copy);
      onnx::shape_inference::InferenceContextImpl ctx(copy, scope->pointers(), scope->constants(),
                                                      {});
      schema->GetTypeAndShapeInferenceFunction()(ctx);
      for (int i = 0; i < n.output_size() && i < static_cast<int>(ctx.getNumOutputs()); ++i) {
        if (n.output(i).empty()) continue;
        scope->SetType(n.output(i), *ctx.getOutputType(i));
      }
    } catch (const std::exception&) {
      return;
    }
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty() || !scope->Rank(n.output(i))) continue;
      CheckSize(where, "output '" + n.output(i) + "'", *scope->pointers().at(n.output(i)));
    }
    if (n.op_type() == "Constant" && n.output_size() == 1) {
      if (const onnx::AttributeProto* value = FindAttr(n, "value")) {
        CheckTensorPayload(value->t(), where, "attribute 'value'");
        scope->SetConstant(n.output(0), &value->t());
      }
    }
  }

  int64_t opset_;
  std::string source_;
};

}  // namespace

void ValidateOnnxModel(const onnx::ModelProto& model, int64_t opset, const std::string& source) {
  const onnx::GraphProto& g = model.graph();
  if (g.node_size() == 0) {
    throw CompileError(source + ": the graph has no nodes; there is nothing to compile");
  }
  if (g.output_size() == 0) {
    throw CompileError(source +
                       ": the graph declares no outputs; name at least one in graph.output");
  }
  // libonnx's version converter dereferences a graph output nothing defines (the checker lets it
  // through).
  std::unordered_set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) defined.insert(n.output().begin(), n.output().end());
  for (const auto& out : g.output()) {
    if (!defined.count(out.name())) {
      throw CompileError(source + ": graph output '" + out.name() +
                         "' is not produced by any node, nor is it an input or initializer");
    }
  }
  Scope scope;
  Validator(opset, source).ValidateGraph(g, &scope);
}

}  // namespace compiler
}  // namespace ember
