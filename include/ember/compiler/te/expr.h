/*!
 * \file ember/compiler/te/expr.h
 * \brief Scalar expressions of the tensor-expression DSL (te) and of the lowered loop IR.
 *
 * An Expr is an immutable, reference-counted tree. The same node kinds serve two levels:
 * te (TensorLoad indexes a Tensor by multi-dimensional indices, Reduce describes a reduction)
 * and the loop IR (BufferLoad reads a flat buffer). Index arithmetic is int64 throughout; the
 * code generator may narrow it per target.
 */
#ifndef EMBER_COMPILER_TE_EXPR_H_
#define EMBER_COMPILER_TE_EXPR_H_

#include <dlpack/dlpack.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember::compiler::te {

using DataType = DLDataType;

/*! \brief Bool values are 1-bit unsigned in expressions and stored as one byte. */
inline DataType Bool() { return DataType{kDLUInt, 1, 1}; }
inline DataType Int(int bits) { return DataType{kDLInt, static_cast<uint8_t>(bits), 1}; }
inline DataType UInt(int bits) { return DataType{kDLUInt, static_cast<uint8_t>(bits), 1}; }
inline DataType Float(int bits) { return DataType{kDLFloat, static_cast<uint8_t>(bits), 1}; }
inline DataType Index() { return Int(64); }
/*! \brief t with `lanes` elements per value (1: scalar). */
inline DataType WithLanes(DataType t, int lanes) {
  t.lanes = static_cast<uint16_t>(lanes);
  return t;
}

inline bool operator==(DataType a, DataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DataType a, DataType b) { return !(a == b); }
inline bool IsFloat(DataType t) { return t.code == kDLFloat; }
/*! \brief Expression booleans are {kDLUInt, 1}; graph tensors may spell bool with code 6 (DLPack's
 * later kDLBool), 8 bits. Both mean one byte per element in memory. */
inline bool IsBool(DataType t) { return (t.code == kDLUInt && t.bits == 1) || t.code == 6; }
inline bool IsInt(DataType t) { return t.code == kDLInt; }
inline bool IsUInt(DataType t) { return t.code == kDLUInt && t.bits != 1; }
/*! \brief Bytes one element occupies in a buffer (bool takes a byte). */
inline int StorageBytes(DataType t) { return (t.bits + 7) / 8 * t.lanes; }
/*! \brief "float32", "int64", "bool", ... */
std::string DataTypeName(DataType t);

enum class ExprKind {
  kIntImm,
  kFloatImm,
  kVar,
  kBinary,
  kNot,
  kSelect,
  kCast,
  kCall,
  kTensorLoad,
  kBufferLoad,
  kReduce,
};

enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,       // float division, or C (truncating) division on integers
  kMod,       // C remainder on integers, fmod on floats
  kFloorDiv,  // integers: rounds toward -inf
  kFloorMod,  // integers: result has the sign of the divisor
  kMin,
  kMax,
  kEQ,
  kNE,
  kLT,
  kLE,
  kGT,
  kGE,
  kAnd,  // logical: operands read as bools
  kOr,
  kXor,
  kBitAnd,  // bitwise, on integers (and bools) of one type
  kBitOr,
  kBitXor,
};

/*! \brief Math intrinsics; the code generator maps them to LLVM intrinsics or libm. */
enum class Intrinsic {
  kExp,
  kLog,
  kSqrt,
  kTanh,
  kErf,
  kPow,
  kFloor,
  kCeil,
  kRound,  // half to even, as ONNX Round
  kFabs,
  kSigmoid,
  kSin,
  kCos,
  kTan,
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kIsNan,
  kIsInf,
  kSign,
  /*! \brief DotU8S8(acc, a, b), int32 vectors: acc plus, per lane, the four products of a's bytes
   * (unsigned) and b's bytes (signed) in that lane, wrapping (x86 vpdpbusd; see DotU8S8()). */
  kDotU8S8,
  /*! \brief DotU8S8Pairs(acc, a, b): as kDotU8S8, but each pair of adjacent products (bytes 0-1,
   * 2-3) is first summed and saturated to int16 (x86 vpmaddubsw then vpmaddwd by ones), so it is
   * exact only where no pair leaves int16; schedules use it where the weights guarantee that. */
  kDotU8S8Pairs,
  /*! \brief MulAddExact(a, b, c), floats: a * b + c, fused into one FMA where the target has it
   * even in functions compiled with exact float arithmetic; only for operands whose products and
   * sums the schedule knows to be exact (integers below 2^24), where fusing cannot change them. */
  kMulAddExact,
  /*! \brief Lane(v, i): element i (an integer literal) of vector v, a scalar (see Lane()). */
  kLane,
  /*! \brief DotS8S8(acc, a, b): as kDotU8S8 with a's bytes signed too (Arm sdot; DotS8S8()). */
  kDotS8S8,
  /*! \brief TransposeByteRows(v): v's bytes as 4 rows of `lanes` bytes transposed, so that lane
   * i holds byte i of each row (TransposeByteRows()). */
  kTransposeByteRows,
  /*! \brief DotS8S8Halves(acc, a, b): as kDotS8S8 with b's bytes in halves order: bytes 0-1 of
   * lane i at 2i and 2i + 1, bytes 2-3 at n * 2 + 2i and n * 2 + 2i + 1 (n lanes), the order
   * the NEON widening dot multiplies in, packed so at compile time (DotS8S8Halves()). The NEON
   * form sums the products of bytes 0 and 2, and of 1 and 3, in int16 (smull + smlal), so it is
   * exact only where no such pair leaves int16; schedules use it where the weights guarantee
   * that (no two -128 paired). */
  kDotS8S8Halves,
  /*! \brief StreamBase(i): the integer i, hidden from the compiler's address arithmetic: the
   * start of a stream of loads that is to keep a base register of its own (see StreamBase()). */
  kStreamBase,
  /*! \brief Shuffle(a, b, m0, m1, ...): a vector of lanes a[m0] or b[m0 - n], ... (n lanes in a
   * and b; the m integer literals), LLVM's shufflevector (see Shuffle()). */
  kShuffle,
  /*! \brief Maximum(a, b) / Minimum(a, b), floats: IEEE 754-2019 maximum and minimum (NaN when
   * either is NaN, -0 below +0), the combining step of a float max or min reduction, which LLVM
   * vectorises as it does not the compare and select of Max / Min (see ReduceMaximum()). */
  kMaximum,
  kMinimum,
  /*! \brief BitCast(v): v's bits read as the call's type, of the same width (see BitCast()). */
  kBitCast,  // the last: IntrinsicName's table checks its length against it
};

enum class ReduceOp { kSum, kProd, kMax, kMin, kArgMax, kArgMin };

class ExprNode;
class TensorNode;
class BufferNode;

/*! \brief A reference to an immutable expression node. */
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : node_(std::move(n)) {}
  /*! \brief Integer literal (int64). */
  Expr(int v);      // NOLINT(runtime/explicit)
  Expr(int64_t v);  // NOLINT(runtime/explicit)
  /*! \brief Float literal (float32). */
  Expr(double v);  // NOLINT(runtime/explicit)

  bool defined() const { return node_ != nullptr; }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  template <typename T>
  const T* as() const;
  DataType dtype() const;
  ExprKind kind() const;
  bool same_as(const Expr& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const ExprNode> node_;
};

class ExprNode {
 public:
  ExprNode(ExprKind k, DataType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
  ExprKind kind;
  DataType dtype;
};

class IntImmNode : public ExprNode {
 public:
  IntImmNode(DataType t, int64_t v) : ExprNode(ExprKind::kIntImm, t), value(v) {}
  int64_t value;
};

class FloatImmNode : public ExprNode {
 public:
  FloatImmNode(DataType t, double v) : ExprNode(ExprKind::kFloatImm, t), value(v) {}
  double value;
};

/*! \brief A variable; identity is the node itself, the name is for printing only. */
class VarNode : public ExprNode {
 public:
  VarNode(DataType t, std::string n) : ExprNode(ExprKind::kVar, t), name(std::move(n)) {}
  std::string name;
};

class BinaryNode : public ExprNode {
 public:
  BinaryNode(DataType t, BinaryOp o, Expr x, Expr y)
      : ExprNode(ExprKind::kBinary, t), op(o), a(std::move(x)), b(std::move(y)) {}
  BinaryOp op;
  Expr a, b;
};

class NotNode : public ExprNode {
 public:
  explicit NotNode(Expr x) : ExprNode(ExprKind::kNot, Bool()), a(std::move(x)) {}
  Expr a;
};

/*! \brief cond ? t : f. Loads inside the arms may be out of range when not selected; the code
 * generator keeps them in bounds. */
class SelectNode : public ExprNode {
 public:
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(ExprKind::kSelect, t.dtype()),
        cond(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
  Expr cond, true_value, false_value;
};

class CastNode : public ExprNode {
 public:
  CastNode(DataType t, Expr v) : ExprNode(ExprKind::kCast, t), value(std::move(v)) {}
  Expr value;
};

class CallNode : public ExprNode {
 public:
  CallNode(DataType t, Intrinsic f, std::vector<Expr> a)
      : ExprNode(ExprKind::kCall, t), fn(f), args(std::move(a)) {}
  Intrinsic fn;
  std::vector<Expr> args;
};

/*! \brief A variable with its range [0, extent): a loop or reduction axis. */
struct IterVar {
  Expr var;  // a VarNode
  int64_t extent = 0;
};

/*! \brief Reduction of `source` over `axes` (only valid as the whole body of a compute).
 * Points where `condition` is false are skipped. ArgMax/ArgMin yield the int64 position along
 * the (single) reduction axis; ties pick the first index unless select_last_index. */
class ReduceNode : public ExprNode {
 public:
  ReduceNode(DataType t, ReduceOp o, Expr src, std::vector<IterVar> ax, Expr cond, bool last)
      : ExprNode(ExprKind::kReduce, t),
        op(o),
        source(std::move(src)),
        axes(std::move(ax)),
        condition(std::move(cond)),
        select_last_index(last) {}
  ReduceOp op;
  Expr source;
  std::vector<IterVar> axes;
  Expr condition;  // may be undefined: always true
  bool select_last_index;
};

template <typename T>
const T* Expr::as() const {
  return dynamic_cast<const T*>(node_.get());
}
inline DataType Expr::dtype() const { return node_->dtype; }
inline ExprKind Expr::kind() const { return node_->kind; }

// ---- constructors -------------------------------------------------------------------------
Expr IntImm(DataType t, int64_t v);
Expr FloatImm(DataType t, double v);
/*! \brief A literal of any dtype (floats, ints, bool). */
Expr Const(DataType t, double v);
Expr MakeVar(const std::string& name, DataType t = Index());
Expr Binary(BinaryOp op, Expr a, Expr b);
Expr Select(Expr cond, Expr t, Expr f);
Expr Cast(DataType t, Expr v);
Expr Call(Intrinsic fn, std::vector<Expr> args);
/*! \brief A vector of `lanes` copies of a scalar: a Cast to the vector type (identity when lanes
 * is 1). Binary operations broadcast a scalar operand of a vector one themselves. */
Expr Broadcast(Expr scalar, int lanes);
Expr Not(Expr a);
Expr Min(Expr a, Expr b);
Expr Max(Expr a, Expr b);
Expr FloorDiv(Expr a, Expr b);
Expr FloorMod(Expr a, Expr b);
Expr Mod(Expr a, Expr b);  // truncating
Expr Pow(Expr a, Expr b);
Expr Exp(Expr a);
Expr Log(Expr a);
Expr Sqrt(Expr a);
Expr Tanh(Expr a);
Expr Erf(Expr a);
Expr Abs(Expr a);  // ints and floats
Expr Sigmoid(Expr a);
Expr Floor(Expr a);
Expr Ceil(Expr a);
Expr Round(Expr a);
/*! \brief kDotU8S8: acc + the u8 x s8 dot products of the four bytes of each lane of a and b. */
Expr DotU8S8(Expr acc, Expr a, Expr b);
/*! \brief kDotS8S8: acc + the s8 x s8 dot products of the four bytes of each lane of a and b. */
Expr DotS8S8(Expr acc, Expr a, Expr b);
/*! \brief kTransposeByteRows: the bytes of `v`, an int32 vector of n lanes, read as 4 rows of n
 * bytes (row k: bytes k * n .. k * n + n - 1) and transposed, so that byte k of lane i is byte i
 * of row k: four consecutive pixels of an NCHW[n]c row become each channel's four bytes, the
 * operand a dot product of a channel's taps reads (one vpermb on AVX-512 VBMI, a tbl on NEON). */
Expr TransposeByteRows(Expr v);
/*! \brief kDotU8S8Pairs: as DotU8S8 with each pair of products saturated to int16 first. */
Expr DotU8S8Pairs(Expr acc, Expr a, Expr b);
/*! \brief kDotS8S8Halves: as DotS8S8 with b's bytes in halves order (see kDotS8S8Halves). */
Expr DotS8S8Halves(Expr acc, Expr a, Expr b);
/*! \brief kMulAddExact: a * b + c of integers held exactly in floats, the result too
 * (llvm.fmuladd); a float Cast of its int32 Cast is itself. */
Expr MulAddExact(Expr a, Expr b, Expr c);
/*! \brief kLane: element `lane` of `vector`. Broadcast against a vector operand it becomes one
 * multiply by element on AArch64 (fmla v.4s, v.4s, v.s[lane]): one vector load serves `lanes`
 * broadcasts instead of a load per broadcast. */
Expr Lane(Expr vector, int lane);
/*! \brief kStreamBase: `index` (an integer scalar), which LLVM may not relate to other indices.
 * Loads at index + small offsets then keep a base register per stream: LLVM's loop strength
 * reduction would otherwise address several streams a constant distance apart (a depthwise
 * conv's tap rows) from one register, at offsets beyond what AArch64's paired load (ldp q,
 * +-1008 bytes) encodes, and every load would go alone. No instruction is emitted for it. */
Expr StreamBase(Expr index);
/*! \brief kShuffle: lane k of the result is lane mask[k] of a's and b's lanes laid end to end (a
 * and b vectors of one type; as many result lanes as mask entries). A register transpose is a
 * few rounds of them (one instruction each on x86 and NEON for interleaving masks). */
Expr Shuffle(Expr a, Expr b, const std::vector<int>& mask);
/*! \brief kMaximum / kMinimum on floats: a float max or min reduction's step. A NaN anywhere
 * makes the result NaN (numpy's max does the same), where Max's compare and select drop a NaN
 * met after the first element; a reduction of them vectorises, one of Max did not (a 6625-wide
 * max ran one element per compare). Integers: Max / Min. */
Expr ReduceMaximum(Expr a, Expr b);
Expr ReduceMinimum(Expr a, Expr b);
/*! \brief kBitCast: the bits of `v` read as `to` (same bit width; bool is one byte, 0 or 1, and
 * reads back as true when any bit is set); float16 values, computed in float, are rounded to
 * their 16 stored bits first. ONNX BitCast. */
Expr BitCast(Expr v, DataType to);
Expr And(Expr a, Expr b);
Expr Or(Expr a, Expr b);
/*! \brief Largest and smallest finite values of a dtype (lowest for Max-init, etc.). */
Expr MaxValue(DataType t);
Expr MinValue(DataType t);

/*! \brief Reduction over axes; `cond` may be undefined. */
Expr Reduce(ReduceOp op, Expr source, std::vector<IterVar> axes, Expr cond = Expr(),
            bool select_last_index = false);
Expr Sum(Expr source, std::vector<IterVar> axes, Expr cond = Expr());
Expr ReduceMax(Expr source, std::vector<IterVar> axes, Expr cond = Expr());
Expr ReduceMin(Expr source, std::vector<IterVar> axes, Expr cond = Expr());
/*! \brief A fresh reduction axis [0, extent). */
IterVar ReduceAxis(int64_t extent, const std::string& name = "k");

Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

/*! \brief If e is an integer literal, store it in *v. */
bool GetConstInt(const Expr& e, int64_t* v);

/*! \brief Human-readable text of an expression (for --dump-ir and error messages). */
std::string ToString(const Expr& e);

}  // namespace ember::compiler::te

#endif  // EMBER_COMPILER_TE_EXPR_H_
