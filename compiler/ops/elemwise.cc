// Compute rules of elementwise unary operators and activations.
#include <cmath>
#include <functional>
#include <limits>

#include "op_common.h"

namespace ember::compiler::ops {
namespace {

using te::DataType;
using UnaryFn = std::function<Expr(const Node&, Expr x)>;

std::vector<Tensor> Map(const Node& node, const std::vector<Tensor>& in, const UnaryFn& fn) {
  const Tensor& x = In(node, in, 0);
  return {te::Compute(
      x.shape(), [&](const std::vector<Expr>& i) { return fn(node, x(i)); }, node.name + "_out")};
}

void Unary(const char* op, UnaryFn fn) {
  OpRegistry::Global()->Mutable(op).set_compute(
      [fn](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>&) {
        return Map(node, in, fn);
      });
}

Expr C(const Expr& like, double v) { return te::Const(like.dtype(), v); }

const bool kRegistered = [] {
  Unary("Identity", [](const Node&, Expr x) { return x; });
  Unary("Abs", [](const Node&, Expr x) { return te::Abs(x); });
  Unary("Neg", [](const Node&, Expr x) { return -x; });
  Unary("Relu", [](const Node&, Expr x) { return te::Max(x, C(x, 0)); });
  Unary("Sigmoid", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return te::Sigmoid(x);
  });
  Unary("Tanh", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return te::Tanh(x);
  });
  Unary("Exp", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return te::Exp(x);
  });
  Unary("Log", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return te::Log(x);
  });
  Unary("Sqrt", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return te::Sqrt(x);
  });
  Unary("Reciprocal", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return C(x, 1) / x;
  });
  Unary("Erf", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return te::Erf(x);
  });
  Unary("Floor", [](const Node&, Expr x) { return te::IsFloat(x.dtype()) ? te::Floor(x) : x; });
  Unary("Ceil", [](const Node&, Expr x) { return te::IsFloat(x.dtype()) ? te::Ceil(x) : x; });
  Unary("Round", [](const Node&, Expr x) { return te::IsFloat(x.dtype()) ? te::Round(x) : x; });
  Unary("Sign", [](const Node&, Expr x) { return te::Call(te::Intrinsic::kSign, {x}); });
  Unary("Not", [](const Node&, Expr x) { return te::Not(x); });
  Unary("BitwiseNot", [](const Node& n, Expr x) {
    RequireInteger(n, x);
    return te::Binary(te::BinaryOp::kBitXor, x, te::IntImm(x.dtype(), -1));  // every bit flipped
  });
  Unary("IsNaN", [](const Node&, Expr x) { return te::Call(te::Intrinsic::kIsNan, {x}); });
  Unary("IsInf", [](const Node& n, Expr x) {
    bool pos = n.GetInt("detect_positive", 1) != 0, neg = n.GetInt("detect_negative", 1) != 0;
    Expr inf = te::Call(te::Intrinsic::kIsInf, {x});
    if (pos && neg) return inf;
    if (pos) return inf && x > C(x, 0);
    if (neg) return inf && x < C(x, 0);
    return te::IntImm(te::Bool(), 0);
  });
  struct Named {
    const char* op;
    te::Intrinsic fn;
  };
  for (Named m : {Named{"Sin", te::Intrinsic::kSin}, Named{"Cos", te::Intrinsic::kCos},
                  Named{"Tan", te::Intrinsic::kTan}, Named{"Asin", te::Intrinsic::kAsin},
                  Named{"Acos", te::Intrinsic::kAcos}, Named{"Atan", te::Intrinsic::kAtan},
                  Named{"Sinh", te::Intrinsic::kSinh}, Named{"Cosh", te::Intrinsic::kCosh},
                  Named{"Asinh", te::Intrinsic::kAsinh}, Named{"Acosh", te::Intrinsic::kAcosh},
                  Named{"Atanh", te::Intrinsic::kAtanh}}) {
    te::Intrinsic f = m.fn;
    Unary(m.op, [f](const Node& n, Expr x) {
      RequireFloat(n, x);
      return te::Call(f, {x});
    });
  }
  // Shrink: x + bias below -lambd, x - bias above lambd, 0 between (integers too).
  Unary("Shrink", [](const Node& n, Expr x) {
    const double lambd = n.GetFloat("lambd", 0.5), bias = n.GetFloat("bias", 0.0);
    return te::Select(x < C(x, -lambd), x + C(x, bias),
                      te::Select(x > C(x, lambd), x - C(x, bias), C(x, 0)));
  });
  Unary("Softplus", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    // log(1 + exp(x)) without overflow: max(x, 0) + log(1 + exp(-|x|))
    return te::Max(x, C(x, 0)) + te::Log(C(x, 1) + te::Exp(-te::Abs(x)));
  });
  Unary("Softsign", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return x / (C(x, 1) + te::Abs(x));
  });
  Unary("HardSwish", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return x * te::Max(te::Min(x * C(x, 1.0 / 6.0) + C(x, 0.5), C(x, 1)), C(x, 0));
  });
  Unary("HardSigmoid", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    double alpha = n.GetFloat("alpha", 0.2), beta = n.GetFloat("beta", 0.5);
    return te::Max(te::Min(x * C(x, alpha) + C(x, beta), C(x, 1)), C(x, 0));
  });
  Unary("Swish", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    return x * te::Sigmoid(x * C(x, n.GetFloat("alpha", 1.0)));
  });
  Unary("Mish", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    Expr sp = te::Max(x, C(x, 0)) + te::Log(C(x, 1) + te::Exp(-te::Abs(x)));
    return x * te::Tanh(sp);
  });
  Unary("Elu", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    double alpha = n.GetFloat("alpha", 1.0);
    return te::Select(x < C(x, 0), C(x, alpha) * (te::Exp(x) - C(x, 1)), x);
  });
  Unary("Celu", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    double alpha = n.GetFloat("alpha", 1.0);
    return te::Max(x, C(x, 0)) +
           te::Min(C(x, alpha) * (te::Exp(x / C(x, alpha)) - C(x, 1)), C(x, 0));
  });
  Unary("Selu", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    double alpha = n.GetFloat("alpha", 1.67326319217681884765625);
    double gamma = n.GetFloat("gamma", 1.05070102214813232421875);
    return te::Select(x <= C(x, 0), C(x, gamma * alpha) * (te::Exp(x) - C(x, 1)), C(x, gamma) * x);
  });
  Unary("LeakyRelu", [](const Node& n, Expr x) {
    double alpha = n.GetFloat("alpha", 0.01);
    return te::Select(x < C(x, 0), C(x, alpha) * x, x);
  });
  Unary("ThresholdedRelu", [](const Node& n, Expr x) {
    double alpha = n.GetFloat("alpha", 1.0);
    return te::Select(x > C(x, alpha), x, C(x, 0));
  });
  Unary("Gelu", [](const Node& n, Expr x) {
    RequireFloat(n, x);
    if (n.GetString("approximate", "none") == "tanh") {
      Expr inner = C(x, std::sqrt(2.0 / M_PI)) * (x + C(x, 0.044715) * x * x * x);
      return C(x, 0.5) * x * (C(x, 1) + te::Tanh(inner));
    }
    return C(x, 0.5) * x * (C(x, 1) + te::Erf(x * C(x, M_SQRT1_2)));
  });
  // Clip: canonical form carries min/max as float attributes (+-inf when absent); older graphs
  // may still hold them as constant inputs.
  OpRegistry::Global()->Mutable("Clip").set_compute(
      [](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>&) {
        const Tensor& x = In(node, in, 0);
        DataType t = x.dtype();
        auto bound = [&](const char* attr, size_t input, bool is_min) -> Expr {
          if (HostTensorPtr c = ConstInput(node, input)) return te::Const(t, c->GetAsDouble(0));
          if (input < in.size() && in[input].defined()) {
            return in[input].ndim() == 0 ? in[input]({}) : in[input]({Expr(0)});
          }
          if (node.HasAttr(attr)) {
            double v = node.GetFloat(attr);
            if (std::isinf(v)) return Expr();
            if (!te::IsFloat(t)) {
              // clamp the literal into the integer range
              double lo = -std::ldexp(1.0, t.bits - 1), hi = std::ldexp(1.0, t.bits - 1) - 1;
              if (te::IsUInt(t)) lo = 0, hi = std::ldexp(1.0, t.bits) - 1;
              v = std::min(std::max(v, lo), hi);
            }
            return te::Const(t, v);
          }
          (void)is_min;
          return Expr();
        };
        Expr lo = bound("min", 1, true), hi = bound("max", 2, false);
        return std::vector<Tensor>{te::Compute(
            x.shape(),
            [&](const std::vector<Expr>& i) {
              Expr v = x(i);
              if (lo.defined()) v = te::Max(v, lo);
              if (hi.defined()) v = te::Min(v, hi);
              return v;
            },
            node.name + "_out")};
      });
  OpRegistry::Global()->Mutable("BitCast").set_compute(
      [](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
        const Tensor& x = In(node, in, 0);
        const DataType to = ExprType(out.at(0).dtype);
        return std::vector<Tensor>{te::Compute(
            x.shape(), [&](const std::vector<Expr>& i) { return te::BitCast(x(i), to); },
            node.name + "_out")};
      });
  OpRegistry::Global()->Mutable("Cast").set_compute(
      [](const Node& node, const std::vector<Tensor>& in, const std::vector<TensorType>& out) {
        const Tensor& x = In(node, in, 0);
        DataType to = ExprType(out.at(0).dtype);
        return std::vector<Tensor>{te::Compute(
            x.shape(),
            [&](const std::vector<Expr>& i) {
              Expr v = x(i);
              // float -> int conversions of out-of-range values are undefined; ONNX tests use
              // in-range values.
              return te::Cast(to, v);
            },
            node.name + "_out")};
      });
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
