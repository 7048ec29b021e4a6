// exp on float32 as plain arithmetic (see CodeGenLLVM::EmitExp).
#include "codegen_llvm.h"

namespace ember::compiler::codegen {

llvm::Type* CodeGenLLVM::Int32Like(llvm::Type* ty) {
  return ty->isVectorTy() ? llvm::VectorType::get(i32_, llvm::cast<llvm::VectorType>(ty))
                          : static_cast<llvm::Type*>(i32_);
}

llvm::Value* CodeGenLLVM::EmitExp(llvm::Value* x) {
  // The reduction below relies on its written order: no reassociation inside it (it would fold
  // the two halves of n * ln2 into one rounded product, or the rounding shift away).
  llvm::IRBuilderBase::FastMathFlagGuard guard(b_);
  b_.setFastMathFlags(llvm::FastMathFlags());
  llvm::Type* ty = x->getType();
  auto f32 = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  llvm::Type* ity = Int32Like(ty);
  auto i32 = [&](int v) { return llvm::ConstantInt::get(ity, v); };
  // Past these bounds the result is 0 or inf anyway; inside them n keeps both powers of two
  // below normal (|n / 2| <= 75).
  llvm::Value* xc = b_.CreateMinNum(b_.CreateMaxNum(x, f32(-104.0)), f32(89.0));
  // x = n ln2 + r, |r| <= ln2 / 2; ln2 in two parts, the first with few enough bits that
  // n * kLn2High is exact for every n here.
  const float ln2_low = static_cast<float>(kLn2 - kLn2High);
  // n = round(x / ln2) by adding and taking away 1.5 * 2^23 (float32 addition rounds to nearest
  // even there), not a rounding intrinsic, which 32-bit ARM has no vector form of.
  constexpr double kRoundingShift = 12582912.0;  // 1.5 * 2^23
  // Each a * b + c below is one MulAdd, fused where the target can: the more exact.
  llvm::Value* n =
      b_.CreateFSub(MulAdd(xc, f32(1.0 / kLn2), f32(kRoundingShift)), f32(kRoundingShift));
  // n * kLn2High is exact, so only the low part's product gains from the fused form.
  llvm::Value* r = MulAdd(n, f32(-kLn2High), xc);
  r = MulAdd(n, f32(-ln2_low), r);
  // e^r = sum r^k / k!, k <= 7: the first term left out, (ln2 / 2)^8 / 8!, is 5.6e-9, below
  // float32's half ulp at 1.
  llvm::Value* p = f32(1.0 / 5040.0);
  for (int k = 6; k >= 0; --k) {
    double inv_factorial = 1.0;
    for (int j = 2; j <= k; ++j) inv_factorial /= j;
    p = MulAdd(p, r, f32(inv_factorial));
  }
  // 2^n as two powers of two built in the exponent field: their product underflows gradually
  // and overflows to inf where exp does.
  llvm::Value* ni = b_.CreateFPToSI(n, ity);
  llvm::Value* half = b_.CreateAShr(ni, i32(1));
  auto power = [&](llvm::Value* e) {
    return b_.CreateBitCast(b_.CreateShl(b_.CreateAdd(e, i32(127)), i32(23)), ty);
  };
  llvm::Value* result = b_.CreateFMul(b_.CreateFMul(p, power(half)), power(b_.CreateSub(ni, half)));
  return b_.CreateSelect(b_.CreateFCmpUNO(x, x), x, result);
}

}  // namespace ember::compiler::codegen
