// Expression constructors with light constant folding, so index arithmetic built by compute rules
// stays small before LLVM sees it.
#include "ember/compiler/te/expr.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "ember/compiler/te/tensor.h"

namespace ember::compiler::te {

std::string DataTypeName(DataType t) {
  if (IsBool(t)) return "bool";
  std::string base = t.code == kDLFloat ? "float" : t.code == kDLInt ? "int" : "uint";
  std::string s = base + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

Expr::Expr(int v) : node_(std::make_shared<IntImmNode>(Index(), v)) {}
Expr::Expr(int64_t v) : node_(std::make_shared<IntImmNode>(Index(), v)) {}
Expr::Expr(double v) : node_(std::make_shared<FloatImmNode>(Float(32), v)) {}

Expr IntImm(DataType t, int64_t v) { return Expr(std::make_shared<IntImmNode>(t, v)); }
Expr FloatImm(DataType t, double v) { return Expr(std::make_shared<FloatImmNode>(t, v)); }

Expr Const(DataType t, double v) {
  if (IsFloat(t)) return FloatImm(t, v);
  if (IsBool(t)) return IntImm(Bool(), v != 0 ? 1 : 0);
  return IntImm(t, static_cast<int64_t>(v));
}

Expr MakeVar(const std::string& name, DataType t) {
  return Expr(std::make_shared<VarNode>(t, name));
}

namespace {

bool IsImm(const Expr& e) {
  return e.kind() == ExprKind::kIntImm || e.kind() == ExprKind::kFloatImm;
}

double ImmValue(const Expr& e) {
  if (auto* i = e.as<IntImmNode>()) return static_cast<double>(i->value);
  return e.as<FloatImmNode>()->value;
}

bool IsConstValue(const Expr& e, double v) { return IsImm(e) && ImmValue(e) == v; }

// Literals adopt the other operand's dtype, so `x * 2.0` works for any float x and `i + 1` for any
// integer i.
void MatchTypes(Expr* a, Expr* b) {
  DataType ta = a->dtype(), tb = b->dtype();
  if (ta == tb) return;
  // A scalar operand of a vector operation is broadcast (literals become vector constants).
  if (ta.lanes != tb.lanes && (ta.lanes == 1 || tb.lanes == 1) && !IsImm(*a) && !IsImm(*b)) {
    if (ta.lanes == 1) *a = Broadcast(*a, tb.lanes);
    if (tb.lanes == 1) *b = Broadcast(*b, ta.lanes);
    ta = a->dtype();
    tb = b->dtype();
    if (ta == tb) return;
  }
  if (IsImm(*a) && !IsImm(*b)) {
    *a = Const(tb, ImmValue(*a));
  } else if (IsImm(*b) && !IsImm(*a)) {
    *b = Const(ta, ImmValue(*b));
  } else if (IsImm(*a) && IsImm(*b)) {
    // Two literals: the float one wins, else the wider.
    DataType t = IsFloat(ta) ? ta : IsFloat(tb) ? tb : (ta.bits >= tb.bits ? ta : tb);
    *a = Const(t, ImmValue(*a));
    *b = Const(t, ImmValue(*b));
  } else {
    throw std::runtime_error("te: operand dtypes differ: " + DataTypeName(ta) + " vs " +
                             DataTypeName(tb) + " in " + ToString(*a) + " and " + ToString(*b));
  }
}

bool IsCompare(BinaryOp op) {
  return op == BinaryOp::kEQ || op == BinaryOp::kNE || op == BinaryOp::kLT || op == BinaryOp::kLE ||
         op == BinaryOp::kGT || op == BinaryOp::kGE;
}

int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Folds integer literals only (float folding could change rounding of the emitted code).
bool FoldInt(BinaryOp op, int64_t a, int64_t b, int64_t* out) {
  switch (op) {
    case BinaryOp::kAdd:
      *out = a + b;
      return true;
    case BinaryOp::kSub:
      *out = a - b;
      return true;
    case BinaryOp::kMul:
      *out = a * b;
      return true;
    case BinaryOp::kDiv:
      if (b == 0) return false;
      *out = a / b;
      return true;
    case BinaryOp::kMod:
      if (b == 0) return false;
      *out = a % b;
      return true;
    case BinaryOp::kFloorDiv:
      if (b == 0) return false;
      *out = FloorDivInt(a, b);
      return true;
    case BinaryOp::kFloorMod:
      if (b == 0) return false;
      *out = a - FloorDivInt(a, b) * b;
      return true;
    case BinaryOp::kMin:
      *out = std::min(a, b);
      return true;
    case BinaryOp::kMax:
      *out = std::max(a, b);
      return true;
    case BinaryOp::kEQ:
      *out = a == b;
      return true;
    case BinaryOp::kNE:
      *out = a != b;
      return true;
    case BinaryOp::kLT:
      *out = a < b;
      return true;
    case BinaryOp::kLE:
      *out = a <= b;
      return true;
    case BinaryOp::kGT:
      *out = a > b;
      return true;
    case BinaryOp::kGE:
      *out = a >= b;
      return true;
    case BinaryOp::kAnd:
      *out = a && b;
      return true;
    case BinaryOp::kOr:
      *out = a || b;
      return true;
    case BinaryOp::kXor:
      *out = (a != 0) != (b != 0);
      return true;
    case BinaryOp::kBitAnd:
      *out = a & b;
      return true;
    case BinaryOp::kBitOr:
      *out = a | b;
      return true;
    case BinaryOp::kBitXor:
      *out = a ^ b;
      return true;
  }
  return false;
}

}  // namespace

Expr Binary(BinaryOp op, Expr a, Expr b) {
  if (!a.defined() || !b.defined()) throw std::runtime_error("te: undefined operand");
  if (op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor) {
    if (!IsBool(a.dtype())) a = Binary(BinaryOp::kNE, a, Const(a.dtype(), 0));
    if (!IsBool(b.dtype())) b = Binary(BinaryOp::kNE, b, Const(b.dtype(), 0));
  }
  if ((op == BinaryOp::kBitAnd || op == BinaryOp::kBitOr || op == BinaryOp::kBitXor) &&
      (IsFloat(a.dtype()) || IsFloat(b.dtype()))) {
    throw std::runtime_error("te: a bitwise operation on floats");
  }
  MatchTypes(&a, &b);
  DataType t = IsCompare(op) ? WithLanes(Bool(), a.dtype().lanes) : a.dtype();
  bool is_int = !IsFloat(a.dtype());
  if (is_int && a.kind() == ExprKind::kIntImm && b.kind() == ExprKind::kIntImm) {
    int64_t v;
    if (FoldInt(op, a.as<IntImmNode>()->value, b.as<IntImmNode>()->value, &v)) return IntImm(t, v);
  }
  if (is_int) {
    switch (op) {
      case BinaryOp::kAdd:
        if (IsConstValue(a, 0)) return b;
        if (IsConstValue(b, 0)) return a;
        break;
      case BinaryOp::kSub:
        if (IsConstValue(b, 0)) return a;
        break;
      case BinaryOp::kMul:
        if (IsConstValue(a, 1)) return b;
        if (IsConstValue(b, 1)) return a;
        if (IsConstValue(a, 0) || IsConstValue(b, 0)) return IntImm(t, 0);
        break;
      case BinaryOp::kDiv:
      case BinaryOp::kFloorDiv:
        if (IsConstValue(b, 1)) return a;
        break;
      case BinaryOp::kMod:
      case BinaryOp::kFloorMod:
        if (IsConstValue(b, 1)) return IntImm(t, 0);
        break;
      default:
        break;
    }
  }
  return Expr(std::make_shared<BinaryNode>(t, op, std::move(a), std::move(b)));
}

Expr Select(Expr cond, Expr t, Expr f) {
  if (!IsBool(cond.dtype())) cond = Binary(BinaryOp::kNE, cond, Const(cond.dtype(), 0));
  MatchTypes(&t, &f);
  if (auto* c = cond.as<IntImmNode>()) return c->value ? t : f;
  return Expr(std::make_shared<SelectNode>(std::move(cond), std::move(t), std::move(f)));
}

// Whether v is Cast(int32, x) of an integer-valued float x (a MulAddExact chain) of type t.
bool IsIntegerRoundTrip(DataType t, const Expr& v) {
  auto* to_int = v.as<CastNode>();
  if (to_int == nullptr || v.dtype() != WithLanes(Int(32), t.lanes)) return false;
  auto* exact = to_int->value.as<CallNode>();
  return exact != nullptr && exact->fn == Intrinsic::kMulAddExact && exact->dtype == t;
}

Expr Cast(DataType t, Expr v) {
  if (v.dtype() == t) return v;
  if (IsImm(v) && !IsBool(t)) return Const(t, ImmValue(v));
  if (IsIntegerRoundTrip(t, v)) return v.as<CastNode>()->value;
  return Expr(std::make_shared<CastNode>(t, std::move(v)));
}

Expr Broadcast(Expr scalar, int lanes) {
  if (scalar.dtype().lanes != 1) {
    throw std::runtime_error("te: broadcast of a vector: " + ToString(scalar));
  }
  DataType t = WithLanes(scalar.dtype(), lanes);
  return Cast(t, std::move(scalar));
}

Expr Call(Intrinsic fn, std::vector<Expr> args) {
  if (args.empty()) throw std::runtime_error("te: intrinsic call without arguments");
  if (args.size() == 2) MatchTypes(&args[0], &args[1]);
  DataType t = args[0].dtype();
  if (fn == Intrinsic::kIsNan || fn == Intrinsic::kIsInf) t = Bool();
  return Expr(std::make_shared<CallNode>(t, fn, std::move(args)));
}

Expr Not(Expr a) {
  if (!IsBool(a.dtype())) a = Binary(BinaryOp::kNE, a, Const(a.dtype(), 0));
  return Expr(std::make_shared<NotNode>(std::move(a)));
}
Expr Min(Expr a, Expr b) { return Binary(BinaryOp::kMin, std::move(a), std::move(b)); }
Expr Max(Expr a, Expr b) { return Binary(BinaryOp::kMax, std::move(a), std::move(b)); }
Expr FloorDiv(Expr a, Expr b) { return Binary(BinaryOp::kFloorDiv, std::move(a), std::move(b)); }
Expr FloorMod(Expr a, Expr b) { return Binary(BinaryOp::kFloorMod, std::move(a), std::move(b)); }
Expr Mod(Expr a, Expr b) { return Binary(BinaryOp::kMod, std::move(a), std::move(b)); }
Expr Pow(Expr a, Expr b) { return Call(Intrinsic::kPow, {std::move(a), std::move(b)}); }
Expr Exp(Expr a) { return Call(Intrinsic::kExp, {std::move(a)}); }
Expr Log(Expr a) { return Call(Intrinsic::kLog, {std::move(a)}); }
Expr Sqrt(Expr a) { return Call(Intrinsic::kSqrt, {std::move(a)}); }
Expr Tanh(Expr a) { return Call(Intrinsic::kTanh, {std::move(a)}); }
Expr Erf(Expr a) { return Call(Intrinsic::kErf, {std::move(a)}); }
Expr Sigmoid(Expr a) { return Call(Intrinsic::kSigmoid, {std::move(a)}); }
Expr Floor(Expr a) { return Call(Intrinsic::kFloor, {std::move(a)}); }
Expr Ceil(Expr a) { return Call(Intrinsic::kCeil, {std::move(a)}); }
Expr Round(Expr a) { return Call(Intrinsic::kRound, {std::move(a)}); }
namespace {
Expr Int8Dot(Intrinsic f, const char* name, Expr acc, Expr a, Expr b) {
  if (acc.dtype() != Int(32) && acc.dtype() != WithLanes(Int(32), acc.dtype().lanes)) {
    throw std::runtime_error(std::string("te: ") + name + " accumulates in int32, got " +
                             DataTypeName(acc.dtype()));
  }
  return Call(f, {std::move(acc), std::move(a), std::move(b)});
}
}  // namespace
Expr DotU8S8(Expr acc, Expr a, Expr b) {
  return Int8Dot(Intrinsic::kDotU8S8, "DotU8S8", std::move(acc), std::move(a), std::move(b));
}
Expr DotS8S8(Expr acc, Expr a, Expr b) {
  return Int8Dot(Intrinsic::kDotS8S8, "DotS8S8", std::move(acc), std::move(a), std::move(b));
}
Expr DotU8S8Pairs(Expr acc, Expr a, Expr b) {
  return Int8Dot(Intrinsic::kDotU8S8Pairs, "DotU8S8Pairs", std::move(acc), std::move(a),
                 std::move(b));
}
Expr DotS8S8Halves(Expr acc, Expr a, Expr b) {
  return Int8Dot(Intrinsic::kDotS8S8Halves, "DotS8S8Halves", std::move(acc), std::move(a),
                 std::move(b));
}
Expr ReduceMaximum(Expr a, Expr b) {
  if (!IsFloat(a.dtype())) return Max(std::move(a), std::move(b));
  return Call(Intrinsic::kMaximum, {std::move(a), std::move(b)});
}

Expr ReduceMinimum(Expr a, Expr b) {
  if (!IsFloat(a.dtype())) return Min(std::move(a), std::move(b));
  return Call(Intrinsic::kMinimum, {std::move(a), std::move(b)});
}

Expr StreamBase(Expr index) {
  const DataType t = index.dtype();
  if (!IsInt(t) || t.lanes != 1) {
    throw std::runtime_error("te: StreamBase takes an integer scalar, got " + DataTypeName(t));
  }
  return Call(Intrinsic::kStreamBase, {std::move(index)});
}
Expr Shuffle(Expr a, Expr b, const std::vector<int>& mask) {
  const DataType t = a.dtype();
  if (t != b.dtype() || t.lanes < 2 || mask.empty()) {
    throw std::runtime_error("te: Shuffle takes two vectors of one type, got " + DataTypeName(t) +
                             " and " + DataTypeName(b.dtype()));
  }
  std::vector<Expr> args{std::move(a), std::move(b)};
  for (int m : mask) {
    if (m < 0 || m >= 2 * t.lanes) {
      throw std::runtime_error("te: Shuffle lane " + std::to_string(m) + " of two " +
                               DataTypeName(t));
    }
    args.push_back(IntImm(Index(), m));
  }
  const int lanes = static_cast<int>(mask.size());
  return Expr(
      std::make_shared<CallNode>(WithLanes(t, lanes), Intrinsic::kShuffle, std::move(args)));
}
Expr TransposeByteRows(Expr v) {
  const DataType t = v.dtype();
  if (t.code != Int(32).code || t.bits != 32 || t.lanes < 2) {
    throw std::runtime_error("te: TransposeByteRows takes an int32 vector, got " + DataTypeName(t));
  }
  return Call(Intrinsic::kTransposeByteRows, {std::move(v)});
}
Expr MulAddExact(Expr a, Expr b, Expr c) {
  if (!IsFloat(a.dtype()) || a.dtype() != b.dtype() || a.dtype() != c.dtype()) {
    throw std::runtime_error("te: MulAddExact takes three floats of one type, got " +
                             DataTypeName(a.dtype()) + ", " + DataTypeName(b.dtype()) + ", " +
                             DataTypeName(c.dtype()));
  }
  return Call(Intrinsic::kMulAddExact, {std::move(a), std::move(b), std::move(c)});
}

Expr BitCast(Expr v, DataType to) {
  const DataType from = v.dtype();
  auto width = [](DataType t) { return IsBool(t) ? 8 : t.bits; };
  if (width(from) != width(to) || to.lanes != 1) {
    throw std::runtime_error("te: bitcast of " + DataTypeName(from) + " to " + DataTypeName(to));
  }
  return Expr(std::make_shared<CallNode>(WithLanes(to, from.lanes), Intrinsic::kBitCast,
                                         std::vector<Expr>{std::move(v)}));
}

Expr Lane(Expr vector, int lane) {
  const DataType t = vector.dtype();
  if (lane < 0 || lane >= t.lanes) {
    throw std::runtime_error("te: lane " + std::to_string(lane) + " of a " + DataTypeName(t));
  }
  std::vector<Expr> args{std::move(vector), IntImm(Index(), lane)};
  return Expr(std::make_shared<CallNode>(WithLanes(t, 1), Intrinsic::kLane, std::move(args)));
}
Expr Abs(Expr a) {
  if (IsFloat(a.dtype())) return Call(Intrinsic::kFabs, {std::move(a)});
  if (IsUInt(a.dtype()) || IsBool(a.dtype())) return a;
  Expr zero = Const(a.dtype(), 0);
  return Select(a < zero, zero - a, a);
}
Expr And(Expr a, Expr b) { return Binary(BinaryOp::kAnd, std::move(a), std::move(b)); }
Expr Or(Expr a, Expr b) { return Binary(BinaryOp::kOr, std::move(a), std::move(b)); }

Expr MaxValue(DataType t) {
  if (IsFloat(t)) return FloatImm(t, std::numeric_limits<double>::infinity());
  if (IsBool(t)) return IntImm(t, 1);
  if (IsUInt(t)) {
    return IntImm(t, t.bits >= 64 ? -1 : static_cast<int64_t>((uint64_t{1} << t.bits) - 1));
  }
  return IntImm(
      t, t.bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits - 1)) - 1);
}

Expr MinValue(DataType t) {
  if (IsFloat(t)) return FloatImm(t, -std::numeric_limits<double>::infinity());
  if (IsBool(t) || IsUInt(t)) return IntImm(t, 0);
  return IntImm(t,
                t.bits >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1)));
}

Expr Reduce(ReduceOp op, Expr source, std::vector<IterVar> axes, Expr cond,
            bool select_last_index) {
  DataType t = source.dtype();
  if (op == ReduceOp::kArgMax || op == ReduceOp::kArgMin) {
    if (axes.size() != 1) throw std::runtime_error("te: ArgMax/ArgMin reduce exactly one axis");
    t = Int(64);
  }
  if (cond.defined() && !IsBool(cond.dtype())) cond = cond != Const(cond.dtype(), 0);
  return Expr(std::make_shared<ReduceNode>(t, op, std::move(source), std::move(axes),
                                           std::move(cond), select_last_index));
}
Expr Sum(Expr source, std::vector<IterVar> axes, Expr cond) {
  return Reduce(ReduceOp::kSum, std::move(source), std::move(axes), std::move(cond));
}
Expr ReduceMax(Expr source, std::vector<IterVar> axes, Expr cond) {
  return Reduce(ReduceOp::kMax, std::move(source), std::move(axes), std::move(cond));
}
Expr ReduceMin(Expr source, std::vector<IterVar> axes, Expr cond) {
  return Reduce(ReduceOp::kMin, std::move(source), std::move(axes), std::move(cond));
}
IterVar ReduceAxis(int64_t extent, const std::string& name) {
  return IterVar{MakeVar(name), extent};
}

Expr operator+(Expr a, Expr b) { return Binary(BinaryOp::kAdd, std::move(a), std::move(b)); }
Expr operator-(Expr a, Expr b) { return Binary(BinaryOp::kSub, std::move(a), std::move(b)); }
Expr operator*(Expr a, Expr b) { return Binary(BinaryOp::kMul, std::move(a), std::move(b)); }
Expr operator/(Expr a, Expr b) { return Binary(BinaryOp::kDiv, std::move(a), std::move(b)); }
Expr operator-(Expr a) {
  Expr zero = Const(a.dtype(), 0);
  if (IsFloat(a.dtype())) zero = FloatImm(a.dtype(), -0.0);
  return Binary(BinaryOp::kSub, zero, std::move(a));
}
Expr operator==(Expr a, Expr b) { return Binary(BinaryOp::kEQ, std::move(a), std::move(b)); }
Expr operator!=(Expr a, Expr b) { return Binary(BinaryOp::kNE, std::move(a), std::move(b)); }
Expr operator<(Expr a, Expr b) { return Binary(BinaryOp::kLT, std::move(a), std::move(b)); }
Expr operator<=(Expr a, Expr b) { return Binary(BinaryOp::kLE, std::move(a), std::move(b)); }
Expr operator>(Expr a, Expr b) { return Binary(BinaryOp::kGT, std::move(a), std::move(b)); }
Expr operator>=(Expr a, Expr b) { return Binary(BinaryOp::kGE, std::move(a), std::move(b)); }
Expr operator&&(Expr a, Expr b) { return And(std::move(a), std::move(b)); }
Expr operator||(Expr a, Expr b) { return Or(std::move(a), std::move(b)); }
Expr operator!(Expr a) { return Not(std::move(a)); }

bool GetConstInt(const Expr& e, int64_t* v) {
  if (auto* i = e.as<IntImmNode>()) {
    *v = i->value;
    return true;
  }
  return false;
}

namespace {

const char* BinaryOpText(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "+";
    case BinaryOp::kSub:
      return "-";
    case BinaryOp::kMul:
      return "*";
    case BinaryOp::kDiv:
      return "/";
    case BinaryOp::kMod:
      return "%";
    case BinaryOp::kFloorDiv:
      return "floordiv";
    case BinaryOp::kFloorMod:
      return "floormod";
    case BinaryOp::kMin:
      return "min";
    case BinaryOp::kMax:
      return "max";
    case BinaryOp::kEQ:
      return "==";
    case BinaryOp::kNE:
      return "!=";
    case BinaryOp::kLT:
      return "<";
    case BinaryOp::kLE:
      return "<=";
    case BinaryOp::kGT:
      return ">";
    case BinaryOp::kGE:
      return ">=";
    case BinaryOp::kAnd:
      return "&&";
    case BinaryOp::kOr:
      return "||";
    case BinaryOp::kXor:
      return "xor";
    case BinaryOp::kBitAnd:
      return "&";
    case BinaryOp::kBitOr:
      return "|";
    case BinaryOp::kBitXor:
      return "^";
  }
  return "?";
}

const char* IntrinsicName(Intrinsic f) {
  // clang-format off
  static const char* kNames[] = {
      "exp",   "log",      "sqrt",           "tanh",         "erf",   "pow",     "floor", "ceil",
      "round", "fabs",     "sigmoid",        "sin",          "cos",   "tan",     "asin",  "acos",
      "atan",  "sinh",     "cosh",           "asinh",        "acosh", "atanh",   "isnan", "isinf",
      "sign",  "dot_u8s8", "dot_u8s8_pairs", "muladd_exact", "lane",  "dot_s8s8",
      "transpose_byte_rows", "dot_s8s8_halves", "stream_base", "shuffle", "maximum", "minimum",
      "bitcast"};
  // clang-format on
  // The last enumerator: one added after it must come with its name here.
  static_assert(sizeof(kNames) / sizeof(kNames[0]) == static_cast<size_t>(Intrinsic::kBitCast) + 1,
                "one name per intrinsic");
  return kNames[static_cast<int>(f)];
}

const char* ReduceName(ReduceOp op) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "argmax", "argmin"};
  return kNames[static_cast<int>(op)];
}

void Print(std::ostream& os, const Expr& e) {
  if (!e.defined()) {
    os << "<undef>";
    return;
  }
  switch (e.kind()) {
    case ExprKind::kIntImm:
      os << e.as<IntImmNode>()->value;
      break;
    case ExprKind::kFloatImm:
      os << e.as<FloatImmNode>()->value << "f";
      break;
    case ExprKind::kVar:
      os << e.as<VarNode>()->name;
      break;
    case ExprKind::kBinary: {
      auto* b = e.as<BinaryNode>();
      if (b->op == BinaryOp::kMin || b->op == BinaryOp::kMax || b->op == BinaryOp::kFloorDiv ||
          b->op == BinaryOp::kFloorMod || b->op == BinaryOp::kXor) {
        os << BinaryOpText(b->op) << "(";
        Print(os, b->a);
        os << ", ";
        Print(os, b->b);
        os << ")";
      } else {
        os << "(";
        Print(os, b->a);
        os << " " << BinaryOpText(b->op) << " ";
        Print(os, b->b);
        os << ")";
      }
      break;
    }
    case ExprKind::kNot:
      os << "!";
      Print(os, e.as<NotNode>()->a);
      break;
    case ExprKind::kSelect: {
      auto* s = e.as<SelectNode>();
      os << "select(";
      Print(os, s->cond);
      os << ", ";
      Print(os, s->true_value);
      os << ", ";
      Print(os, s->false_value);
      os << ")";
      break;
    }
    case ExprKind::kCast:
      os << DataTypeName(e.dtype()) << "(";
      Print(os, e.as<CastNode>()->value);
      os << ")";
      break;
    case ExprKind::kCall: {
      auto* c = e.as<CallNode>();
      os << IntrinsicName(c->fn) << "(";
      for (size_t i = 0; i < c->args.size(); ++i) {
        if (i) os << ", ";
        Print(os, c->args[i]);
      }
      os << ")";
      break;
    }
    case ExprKind::kTensorLoad: {
      auto* l = e.as<TensorLoadNode>();
      os << l->tensor->name << "[";
      for (size_t i = 0; i < l->indices.size(); ++i) {
        if (i) os << ", ";
        Print(os, l->indices[i]);
      }
      os << "]";
      break;
    }
    case ExprKind::kReduce: {
      auto* r = e.as<ReduceNode>();
      os << ReduceName(r->op) << "(";
      Print(os, r->source);
      os << ", axes=[";
      for (size_t i = 0; i < r->axes.size(); ++i) {
        if (i) os << ", ";
        Print(os, r->axes[i].var);
        os << ":" << r->axes[i].extent;
      }
      os << "]";
      if (r->condition.defined()) {
        os << ", where ";
        Print(os, r->condition);
      }
      os << ")";
      break;
    }
    case ExprKind::kBufferLoad:
      os << "<buffer load>";
      break;
  }
}

}  // namespace

std::string ToString(const Expr& e) {
  std::ostringstream os;
  Print(os, e);
  return os.str();
}

}  // namespace ember::compiler::te
