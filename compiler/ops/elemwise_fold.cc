// Host constant folds (OpDef::fold) of the elementwise unary ops, Clip and Cast: shape math in
// exported models runs them on int64 as often as on floats.
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cmath>

#include "ops/fold_util.h"

namespace ember::compiler::ops {
namespace {

using ScalarFn = double (*)(double);

// Computes in double and stores in the output dtype. Transcendental ops (float_only) have no
// integer meaning, so they leave integer inputs to the kernel's checks.
FFold UnaryFold(ScalarFn f, bool float_only) {
  return [f, float_only](const Node&, const FoldInputs& in, const FoldTypes& outs) -> FoldOutputs {
    if (in.size() != 1) return {};
    const HostTensor& x = *in[0];
    if (float_only && !IsFloat(x.type.dtype)) return {};
    auto out = std::make_shared<HostTensor>(outs.at(0));
    for (int64_t i = 0; i < out->NumElements(); ++i) {
      if (IsFloat(x.type.dtype)) {
        out->SetFromDouble(i, f(x.GetAsDouble(i)));
      } else {
        out->SetFromDouble(i, f(static_cast<double>(x.GetAsInt(i))));
      }
    }
    return {out};
  };
}

// Canonical Clip: the bounds are attributes.
FoldOutputs ClipFold(const Node& n, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() != 1) return {};
  const HostTensor& x = *in[0];
  auto out = std::make_shared<HostTensor>(outs.at(0));
  const double lo = n.GetFloat("min"), hi = n.GetFloat("max");
  for (int64_t i = 0; i < out->NumElements(); ++i) {
    if (IsFloat(x.type.dtype)) {
      out->SetFromDouble(i, std::min(std::max(x.GetAsDouble(i), lo), hi));
    } else {
      out->SetFromDouble(i, std::min(std::max(static_cast<double>(x.GetAsInt(i)), lo), hi));
    }
  }
  return {out};
}

// Float to integer truncates and saturates, NaN to 0 (to bool: nonzero); integers convert exactly.
FoldOutputs CastFold(const Node&, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() != 1) return {};
  const HostTensor& x = *in[0];
  auto out = std::make_shared<HostTensor>(outs.at(0));
  for (int64_t i = 0; i < out->NumElements(); ++i) {
    if (IsFloat(x.type.dtype) && !IsFloat(out->type.dtype)) {
      double v = x.GetAsDouble(i);
      if (out->type.dtype == kBool) {
        out->SetFromInt(i, v != 0);
      } else {
        out->SetFromDouble(i, std::trunc(v));
      }
    } else if (IsFloat(x.type.dtype)) {
      out->SetFromDouble(i, x.GetAsDouble(i));
    } else if (IsFloat(out->type.dtype)) {
      out->SetFromDouble(i, static_cast<double>(x.GetAsInt(i)));
    } else {
      out->SetFromInt(i, x.GetAsInt(i));
    }
  }
  return {out};
}

struct UnaryEntry {
  const char* op;
  ScalarFn fn;
  bool float_only;
};

const UnaryEntry kUnary[] = {
    {"Neg", [](double x) { return -x; }, false},
    {"Abs", [](double x) { return std::fabs(x); }, false},
    {"Sqrt", [](double x) { return std::sqrt(x); }, true},
    {"Exp", [](double x) { return std::exp(x); }, true},
    {"Log", [](double x) { return std::log(x); }, true},
    {"Reciprocal", [](double x) { return 1.0 / x; }, true},
    {"Relu", [](double x) { return x > 0 ? x : 0; }, false},
    {"Floor", [](double x) { return std::floor(x); }, false},
    {"Ceil", [](double x) { return std::ceil(x); }, false},
    {"Round", [](double x) { return std::nearbyint(x); }, false},
    {"Sign", [](double x) -> double { return x > 0 ? 1 : (x < 0 ? -1 : 0); }, false},
    {"Sigmoid", [](double x) { return 1.0 / (1.0 + std::exp(-x)); }, true},
    {"Tanh", [](double x) { return std::tanh(x); }, true},
    {"Erf", [](double x) { return std::erf(x); }, true},
    {"Not", [](double x) -> double { return x == 0 ? 1 : 0; }, false},
    {"Sin", [](double x) { return std::sin(x); }, true},
    {"Cos", [](double x) { return std::cos(x); }, true},
    {"Tan", [](double x) { return std::tan(x); }, true},
    {"Asin", [](double x) { return std::asin(x); }, true},
    {"Acos", [](double x) { return std::acos(x); }, true},
    {"Atan", [](double x) { return std::atan(x); }, true},
    {"Sinh", [](double x) { return std::sinh(x); }, true},
    {"Cosh", [](double x) { return std::cosh(x); }, true},
    {"Asinh", [](double x) { return std::asinh(x); }, true},
    {"Acosh", [](double x) { return std::acosh(x); }, true},
    {"Atanh", [](double x) { return std::atanh(x); }, true},
};

const bool kRegistered = [] {
  for (const UnaryEntry& u : kUnary) {
    OpRegistry::Global()->Mutable(u.op).set_fold(UnaryFold(u.fn, u.float_only));
  }
  OpRegistry::Global()->Mutable("Clip").set_fold(ClipFold);
  OpRegistry::Global()->Mutable("Cast").set_fold(CastFold);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
