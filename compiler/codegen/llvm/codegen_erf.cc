// erf on float32 as plain arithmetic (see CodeGenLLVM::EmitErf).
#include "codegen_llvm.h"

namespace ember::compiler::codegen {

namespace {

// Least-squares fits (6000 Chebyshev points, relative error weighted, each coefficient rounded to
// float32 before the next ones were refitted). Below |x| = 1: erf(x) / x - 1 as a polynomial in
// x^2, within 2e-9.
constexpr double kNearZero[] = {0.128379166,   -0.37612626,     0.112835824,   -0.0268536434,
                                0.00518796267, -0.000800679263, 7.84228178e-05};
// From 1 to 3.95 (erf rounds to 1 past 3.92): erfc(x) e^(x^2) as a polynomial in 1 / x, whose
// error there is below 1e-8 of erf.
constexpr double kTail[] = {0.000254488958, 0.559298277,   0.0402484722, -0.464897901, 0.481256515,
                            -0.219259053,   0.00399687653, 0.038093701,  -0.0114078289};

}  // namespace

llvm::Value* CodeGenLLVM::EmitErf(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.setFastMathFlags(llvm::FastMathFlags());
  llvm::Type* ty = x->getType();
  auto f32 = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  auto horner = [&](const double* c, size_t n, llvm::Value* v) {
    llvm::Value* p = f32(c[n - 1]);
    for (size_t k = n - 1; k-- > 0;) p = MulAdd(p, v, f32(c[k]));
    return p;
  };
  llvm::Value* a = b_.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value* s = b_.CreateFMul(a, a);
  // a + a * (erf(a) / a - 1): the 1 kept out of the polynomial is exact, so the sum rounds once.
  llvm::Value* near_zero = MulAdd(a, horner(kNearZero, std::size(kNearZero), s), a);
  // 1 - e^(-a^2) * tail(1 / a), fused: 1 at large a (the exponential is 0 there), NaN kept.
  llvm::Value* tail = horner(kTail, std::size(kTail), b_.CreateFDiv(f32(1.0), a));
  llvm::Value* far = MulAdd(b_.CreateFNeg(EmitExp(b_.CreateFNeg(s))), tail, f32(1.0));
  llvm::Value* r = b_.CreateSelect(b_.CreateFCmpOLT(a, f32(1.0)), near_zero, far);
  // On |x|, the sign put back last (erf is odd; -0 stays -0).
  return b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, r, x);
}

}  // namespace ember::compiler::codegen
