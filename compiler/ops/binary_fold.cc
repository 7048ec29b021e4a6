// Host constant folds (OpDef::fold) of the broadcasting binary ops and Where. Float inputs
// compute in double; integer inputs in int64, so shape arithmetic stays exact.
#include <ember/compiler/ir/op_registry.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "ir/shape_util.h"
#include "ops/fold_util.h"

namespace ember::compiler::ops {
namespace {

// Each returns false where the op has no value for that input kind (the fold then declines).
using FloatFn = std::function<bool(const Node&, double x, double y, double* r)>;
using IntFn = std::function<bool(const Node&, int64_t x, int64_t y, int64_t* r)>;

// int_fn empty: computed in double whatever the input dtype (Pow).
FFold BinaryFold(FloatFn float_fn, IntFn int_fn) {
  return [float_fn, int_fn](const Node& n, const FoldInputs& in,
                            const FoldTypes& outs) -> FoldOutputs {
    if (in.size() != 2) return {};
    const HostTensor &a = *in[0], &b = *in[1];
    auto out = std::make_shared<HostTensor>(outs.at(0));
    const bool in_double = IsFloat(a.type.dtype) || !int_fn;
    for (int64_t i = 0; i < out->NumElements(); ++i) {
      const int64_t ia = BroadcastIndex(i, out->type.shape, a.type.shape);
      const int64_t ib = BroadcastIndex(i, out->type.shape, b.type.shape);
      if (in_double) {
        double r;
        if (!float_fn(n, a.GetAsDouble(ia), b.GetAsDouble(ib), &r)) return {};
        out->SetFromDouble(i, r);  // to an integer output: truncated and saturated
      } else {
        int64_t r;
        if (!int_fn(n, a.GetAsInt(ia), b.GetAsInt(ib), &r)) return {};
        out->SetFromInt(i, r);
      }
    }
    return {out};
  };
}

// The ops whose float and integer forms read alike (no division, no zero check): fn is generic.
template <typename Fn>
FFold SameForm(Fn fn) {
  return BinaryFold(
      [fn](const Node&, double x, double y, double* r) {
        *r = fn(x, y);
        return true;
      },
      [fn](const Node&, int64_t x, int64_t y, int64_t* r) {
        *r = fn(x, y);
        return true;
      });
}

int64_t FloorMod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

bool DivFloat(const Node&, double x, double y, double* r) {
  *r = x / y;
  return true;
}

bool DivInt(const Node& n, int64_t x, int64_t y, int64_t* r) {
  if (y == 0) NodeError(n, "integer division by zero in a constant expression");
  *r = x / y;
  return true;
}

bool PowFloat(const Node&, double x, double y, double* r) {
  *r = std::pow(x, y);
  return true;
}

// Float Mod is defined only with fmod=1 (C's fmod); integer Mod follows fmod's sign rule.
bool ModFloat(const Node& n, double x, double y, double* r) {
  if (!n.GetInt("fmod", 0)) return false;
  *r = std::fmod(x, y);
  return true;
}

bool ModInt(const Node& n, int64_t x, int64_t y, int64_t* r) {
  if (y == 0) NodeError(n, "integer modulo by zero in a constant expression");
  *r = n.GetInt("fmod", 0) ? x % y : FloorMod(x, y);
  return true;
}

FoldOutputs WhereFold(const Node&, const FoldInputs& in, const FoldTypes& outs) {
  if (in.size() != 3) return {};
  auto out = std::make_shared<HostTensor>(outs.at(0));
  const int64_t es = DTypeBytes(out->type.dtype);
  for (int64_t i = 0; i < out->NumElements(); ++i) {
    bool c = in[0]->GetAsInt(BroadcastIndex(i, out->type.shape, in[0]->type.shape)) != 0;
    const HostTensor& src = c ? *in[1] : *in[2];
    int64_t j = BroadcastIndex(i, out->type.shape, src.type.shape);
    std::memcpy(out->data.data() + i * es, src.data.data() + j * es, static_cast<size_t>(es));
  }
  return {out};
}

const bool kRegistered = [] {
  auto reg = [](const char* op, FFold fn) { OpRegistry::Global()->Mutable(op).set_fold(fn); };
  reg("Add", SameForm([](auto x, auto y) { return x + y; }));
  reg("Sub", SameForm([](auto x, auto y) { return x - y; }));
  reg("Mul", SameForm([](auto x, auto y) { return x * y; }));
  reg("Max", SameForm([](auto x, auto y) { return std::max(x, y); }));
  reg("Min", SameForm([](auto x, auto y) { return std::min(x, y); }));
  reg("Equal", SameForm([](auto x, auto y) { return x == y; }));
  reg("Less", SameForm([](auto x, auto y) { return x < y; }));
  reg("Greater", SameForm([](auto x, auto y) { return x > y; }));
  reg("LessOrEqual", SameForm([](auto x, auto y) { return x <= y; }));
  reg("GreaterOrEqual", SameForm([](auto x, auto y) { return x >= y; }));
  reg("And", SameForm([](auto x, auto y) { return (x != 0) && (y != 0); }));
  reg("Or", SameForm([](auto x, auto y) { return (x != 0) || (y != 0); }));
  reg("Xor", SameForm([](auto x, auto y) { return (x != 0) != (y != 0); }));
  // Bitwise ops: integers only (a float input declines the fold; the op refuses it).
  auto bitwise = [](int64_t (*f)(int64_t, int64_t)) {
    return BinaryFold([](const Node&, double, double, double*) { return false; },
                      [f](const Node&, int64_t x, int64_t y, int64_t* r) {
                        *r = f(x, y);
                        return true;
                      });
  };
  reg("BitwiseAnd", bitwise([](int64_t x, int64_t y) { return x & y; }));
  reg("BitwiseOr", bitwise([](int64_t x, int64_t y) { return x | y; }));
  reg("BitwiseXor", bitwise([](int64_t x, int64_t y) { return x ^ y; }));
  reg("Div", BinaryFold(DivFloat, DivInt));
  reg("Pow", BinaryFold(PowFloat, nullptr));
  reg("Mod", BinaryFold(ModFloat, ModInt));
  reg("Where", WhereFold);
  return true;
}();

}  // namespace
}  // namespace ember::compiler::ops
