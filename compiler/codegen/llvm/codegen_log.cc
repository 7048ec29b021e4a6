// The natural logarithm on float32 as plain arithmetic (see CodeGenLLVM::EmitLog).
#include <limits>

#include "codegen_llvm.h"

namespace ember::compiler::codegen {

llvm::Value* CodeGenLLVM::EmitLog(llvm::Value* x) {
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.setFastMathFlags(llvm::FastMathFlags());
  llvm::Type* ty = x->getType();
  auto f32 = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  llvm::Type* ity = Int32Like(ty);
  auto i32 = [&](uint32_t v) { return llvm::ConstantInt::get(ity, v); };
  // A denormal is scaled into the normal range first, 2^23 taken back from the exponent.
  llvm::Value* denormal = b_.CreateFCmpOLT(x, f32(0x1p-126));
  llvm::Value* xn = b_.CreateSelect(denormal, b_.CreateFMul(x, f32(0x1p23)), x);
  // x = 2^e * m with m in [sqrt(1/2), sqrt(2)): the bits less those of sqrt(1/2) hold e in their
  // exponent field and m's mantissa below it.
  constexpr uint32_t kSqrtHalfBits = 0x3f3504f3;
  llvm::Value* d = b_.CreateSub(b_.CreateBitCast(xn, ity), i32(kSqrtHalfBits));
  llvm::Value* e = b_.CreateFSub(b_.CreateSIToFP(b_.CreateAShr(d, i32(23)), ty),
                                 b_.CreateSelect(denormal, f32(23.0), f32(0.0)));
  llvm::Value* m =
      b_.CreateBitCast(b_.CreateAdd(b_.CreateAnd(d, i32(0x7fffff)), i32(kSqrtHalfBits)), ty);
  // log(1 + f) = 2 atanh(s), s = f / (2 + f), |s| <= 0.172: f - s (f - R) with R = sum 2 s^2k /
  // (2k + 1), k = 1..5 (the first term left out is below 3e-11). f = m - 1 is exact and carries
  // the leading bits; the correction's rounding is f / 2 times smaller. Within 0.92 ulp.
  llvm::Value* f = b_.CreateFSub(m, f32(1.0));
  llvm::Value* s = b_.CreateFDiv(f, b_.CreateFAdd(f, f32(2.0)));
  llvm::Value* z = b_.CreateFMul(s, s);
  llvm::Value* r = f32(2.0 / 11.0);
  for (int k = 4; k >= 1; --k) r = MulAdd(r, z, f32(2.0 / (2 * k + 1)));
  r = b_.CreateFMul(r, z);
  llvm::Value* log1p = MulAdd(b_.CreateFNeg(s), b_.CreateFSub(f, r), f);
  // + e ln2 (e * kLn2High is exact).
  llvm::Value* y = MulAdd(e, f32(kLn2High), MulAdd(e, f32(kLn2 - kLn2High), log1p));
  // log(+inf) = +inf and log(NaN) = NaN (x itself: unordered or equal), log(+-0) = -inf, NaN
  // below 0.
  const double inf = std::numeric_limits<double>::infinity();
  y = b_.CreateSelect(b_.CreateFCmpUEQ(x, f32(inf)), x, y);
  y = b_.CreateSelect(b_.CreateFCmpOEQ(x, f32(0.0)), f32(-inf), y);
  return b_.CreateSelect(b_.CreateFCmpOLT(x, f32(0.0)),
                         f32(std::numeric_limits<double>::quiet_NaN()), y);
}

}  // namespace ember::compiler::codegen
