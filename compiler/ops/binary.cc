// Compute rules of binary (numpy-broadcasting) operators, comparisons and Where.
#include <functional>

#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using BinaryFn = std::function<Expr(const Node&, Expr a, Expr b)>;

void Binary(const char* op, BinaryFn fn) {
  OpRegistry::Global()->Mutable(op).set_compute(
      [fn](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
        const Tensor& a = In(node, in, 0);
        const Tensor& b = In(node, in, 1);
        return std::vector<Tensor>{te::Compute(
            out.at(0).shape,
            [&](const std::vector<Expr>& i) {
              return fn(node, BroadcastLoad(a, i), BroadcastLoad(b, i));
            },
            node.name + "_out")};
      });
}

Expr C(const Expr& like, double v) { return te::Const(like.dtype(), v); }

const bool kRegistered = [] {
  Binary("Add", [](const Node&, Expr a, Expr b) { return a + b; });
  Binary("Sub", [](const Node&, Expr a, Expr b) { return a - b; });
  Binary("Mul", [](const Node&, Expr a, Expr b) { return a * b; });
  Binary("Div", [](const Node&, Expr a, Expr b) { return a / b; });
  Binary("Max", [](const Node&, Expr a, Expr b) { return te::Max(a, b); });
  Binary("Min", [](const Node&, Expr a, Expr b) { return te::Min(a, b); });
  Binary("Sum", [](const Node&, Expr a, Expr b) { return a + b; });
  Binary("And", [](const Node&, Expr a, Expr b) { return a && b; });
  Binary("Or", [](const Node&, Expr a, Expr b) { return a || b; });
  Binary("Xor", [](const Node&, Expr a, Expr b) { return te::Binary(te::BinaryOp::kXor, a, b); });
  // Opset 18's bitwise ops, on integers.
  for (auto [op, bin] : {std::pair{"BitwiseAnd", te::BinaryOp::kBitAnd},
                         std::pair{"BitwiseOr", te::BinaryOp::kBitOr},
                         std::pair{"BitwiseXor", te::BinaryOp::kBitXor}}) {
    Binary(op, [bin = bin](const Node& n, Expr a, Expr b) {
      RequireInteger(n, a);
      return te::Binary(bin, a, b);
    });
  }
  Binary("Equal", [](const Node&, Expr a, Expr b) { return a == b; });
  Binary("Less", [](const Node&, Expr a, Expr b) { return a < b; });
  Binary("Greater", [](const Node&, Expr a, Expr b) { return a > b; });
  Binary("LessOrEqual", [](const Node&, Expr a, Expr b) { return a <= b; });
  Binary("GreaterOrEqual", [](const Node&, Expr a, Expr b) { return a >= b; });
  Binary("Mod", [](const Node& n, Expr a, Expr b) {
    bool fmod = n.GetInt("fmod", 0) != 0;
    if (fmod || te::IsUInt(a.dtype())) return te::Mod(a, b);
    if (te::IsFloat(a.dtype())) {
      Expr r = te::Mod(a, b);  // C fmod, then shift into the divisor's sign
      return te::Select((r != C(r, 0)) && ((r < C(r, 0)) != (b < C(b, 0))), r + b, r);
    }
    return te::FloorMod(a, b);
  });
  Binary("PRelu",
         [](const Node&, Expr x, Expr slope) { return te::Select(x < C(x, 0), slope * x, x); });
  Binary("BitShift", [](const Node& n, Expr a, Expr b) {
    bool left = n.GetString("direction") == "LEFT";
    // Shift through multiplication/division by powers of two keeps the loop IR small.
    Expr p =
        te::Cast(a.dtype(), te::Pow(te::Const(te::Float(64), 2.0), te::Cast(te::Float(64), b)));
    return left ? a * p : a / p;
  });
  OpRegistry::Global()->Mutable("Pow").set_compute(
      [](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
        const Tensor& a = In(node, in, 0);
        const Tensor& b = In(node, in, 1);
        te::DataType t = ExprType(out.at(0).dtype);
        // A constant exponent of 2 (exporters' square: LayerNorm's variance, a power spectrum)
        // is x * x, the same correctly rounded value as pow's, without a libm call per element.
        const HostTensorPtr exponent = ConstInput(node, 1);
        const bool square = te::IsFloat(t) && exponent != nullptr && exponent->NumElements() == 1 &&
                            exponent->GetAsDouble(0) == 2.0;
        return std::vector<Tensor>{te::Compute(
            out.at(0).shape,
            [&](const std::vector<Expr>& i) {
              Expr x = BroadcastLoad(a, i), y = BroadcastLoad(b, i);
              if (square) return x * x;
              if (te::IsFloat(t)) return te::Pow(x, te::Cast(t, y));
              Expr r = te::Pow(te::Cast(te::Float(64), x), te::Cast(te::Float(64), y));
              return te::Cast(t, r);
            },
            node.name + "_out")};
      });
  OpRegistry::Global()->Mutable("Where").set_compute(
      [](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
        const Tensor& c = In(node, in, 0);
        const Tensor& x = In(node, in, 1);
        const Tensor& y = In(node, in, 2);
        return std::vector<Tensor>{te::Compute(
            out.at(0).shape,
            [&](const std::vector<Expr>& i) {
              return te::Select(BroadcastLoad(c, i), BroadcastLoad(x, i), BroadcastLoad(y, i));
            },
            node.name + "_out")};
      });
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
