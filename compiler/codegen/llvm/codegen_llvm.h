// Loop IR -> LLVM IR for one module (private to compiler/codegen/llvm): expressions and statements
// in codegen_llvm.cc, the CPU calling convention in codegen_cpu.cc, parallel loops in
// codegen_parallel.cc.
#ifndef EMBER_COMPILER_CODEGEN_LLVM_CODEGEN_LLVM_H_
#define EMBER_COMPILER_CODEGEN_LLVM_CODEGEN_LLVM_H_

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/compiler/lower.h"
#include "ember/compiler/target.h"

namespace ember::compiler::codegen {

// ln 2 in two parts for exp's and log's reductions, the first with few enough bits (355 / 512)
// that its product with any exponent either meets is exact.
constexpr double kLn2 = 0.69314718055994530942;
constexpr double kLn2High = 0.693359375;

class CodeGenLLVM {
 public:
  // define_module_ctx: whether this module defines `__tvm_module_ctx`; the other modules of
  // the same library only declare it, so the linked library has one.
  CodeGenLLVM(llvm::Module* module, const Target& target, bool define_module_ctx = true);

  /*! \brief Emits the exported packed function for f. */
  llvm::Function* AddFunction(const lower::LoweredFunc& f);
  /*! \brief The `__tvm_module_ctx` global (created once). */
  llvm::GlobalVariable* ModuleCtx();
  /*! \brief A static constructor registering every named function (and the module ctx) with
   * TVMBackendRegisterSystemLibSymbol; the functions may live in other modules. */
  void AddSystemLibRegistration(const std::vector<std::string>& func_names);

 private:
  struct FuncState;
  llvm::Type* ValueType(te::DataType t);
  llvm::Type* StorageType(te::DataType t);
  llvm::Type* IndexType() { return index_ty_; }
  llvm::Value* Emit(const te::Expr& e);
  llvm::Value* EmitIndex(const te::Expr& e);
  llvm::Value* EmitBinary(const te::BinaryNode* b);
  // Integer a / b and a % b (kDiv, kMod, kFloorDiv, kFloorMod) that never trap: see the .cc.
  llvm::Value* EmitIntegerDivision(te::BinaryOp op, llvm::Value* a, llvm::Value* b, bool is_signed);
  llvm::Value* EmitCall(const te::CallNode* c);
  // te::DotU8S8: vpdpbusd where the target has it (AVX-512 VNNI, AVX-VNNI), Arm usdot (i8mm);
  // te::DotS8S8: Arm sdot (dotprod), else EmitWideningDot on NEON; te::DotU8S8Pairs: vpmaddubsw +
  // vpmaddwd where the target has them (AVX2, AVX-512BW); each else by its definition (`fn` names
  // which).
  llvm::Value* EmitInt8Dot(te::Intrinsic fn, llvm::Value* acc, llvm::Value* a, llvm::Value* b);
  // te::DotS8S8 on four int32 lanes without a dot instruction (Target::int8_widening_bits): two
  // widening multiplies and two pairwise widening adds (NEON smull + sadalp), exact for any bytes;
  // DotS8S8Halves (b in halves order): smull + smlal + sadalp.
  llvm::Value* EmitWideningDot(llvm::Value* acc, llvm::Value* a, llvm::Value* b, bool b_in_halves);
  // The two 8-byte halves of a dot operand in halves order (te::kDotS8S8Halves), reordered
  // unless `in_halves` says it is already.
  std::pair<llvm::Value*, llvm::Value*> EmitHalves(llvm::Value* v, bool in_halves);
  llvm::Value* EmitTransposeByteRows(llvm::Value* v);
  // te::StreamBase: the index behind an optimisation barrier (see te::kStreamBase).
  llvm::Value* EmitStreamBase(llvm::Value* index);
  // min / max(a, b) where the result goes to an integer (EmitClampToInteger): minnum / maxnum
  // with no-NaNs and no-signed-zeros.
  llvm::Value* EmitIntegerBound(te::BinaryOp op, llvm::Value* a, llvm::Value* b);
  // A float-to-integer Cast of a requantization's value: lrint / fcvtns instead of roundeven and
  // a truncation; null where `e` is not of that form or the target lacks them.
  llvm::Value* EmitRoundedToInteger(te::DataType to, const te::Expr& e);
  llvm::Value* EmitCast(te::DataType to, te::DataType from, llvm::Value* v);
  llvm::Value* CastInt(llvm::Value* v, llvm::Type* to, bool is_signed);
  // te::BitCast: v (a value of type `from`) as the integer of its stored bits, then those bits read
  // as `to`; float16 goes through half, bool through one byte.
  llvm::Value* EmitBitCast(te::DataType to, te::DataType from, llvm::Value* v);
  void EmitStmt(const lower::Stmt& s);
  void EmitFor(const lower::ForNode* f);
  // vectorize: 1 forces LLVM's loop vectoriser, -1 forbids it and unrolling, 0 lets LLVM decide.
  void EmitLoop(const te::Expr& var, llvm::Value* begin, llvm::Value* end, int vectorize,
                const lower::Stmt& body);
  void EmitParallelFor(const lower::ForNode* f);
  // The claim counters of the current function's parallel loops (see codegen_parallel.cc).
  llvm::Value* ParallelCounters();
  llvm::Value* BufferPtr(const lower::BufferNode* b);
  llvm::Value* ConstantBuffer(const lower::BufferNode* b);
  // The flags of every float operation unless a function asks for exact_float.
  static llvm::FastMathFlags FastFloat();
  // The type of b's elements in memory: half for float16 buffers, but not for locals.
  llvm::Type* ElementType(const lower::BufferNode* b);
  // v rounded to float16 precision and widened back (float16 values live in float).
  /*! \brief A unary LLVM intrinsic on x, lane by lane where the target cannot take the vector. */
  llvm::Value* EmitUnaryIntrinsic(llvm::Intrinsic::ID id, llvm::Value* x);
  // Float Max/Min as the compare+select that propagates a NaN `a`, or its one-instruction twin.
  llvm::Value* EmitFloatMinMax(bool max, llvm::Value* a, llvm::Value* b);
  // e, a float converted to an integer type next; a chain of Min/Max (a clamp) as minnum/maxnum.
  llvm::Value* EmitClampToInteger(const te::Expr& e);
  llvm::Value* RoundToHalf(llvm::Value* v);
  // a * b + c as llvm.fmuladd: one fused instruction where the target has one (x86 FMA, AArch64,
  // ARMv7 with VFPv4), a multiply and an add where not.
  llvm::Value* MulAdd(llvm::Value* a, llvm::Value* b, llvm::Value* c);
  // exp of a float32 scalar or vector as plain arithmetic, within 1 ulp, so that a loop holding
  // it vectorises (llvm.exp lowers to a libm call per lane): codegen_exp.cc.
  llvm::Value* EmitExp(llvm::Value* x);
  // i32, or a vector of i32 as wide as the float vector ty: the bits exp and log work on.
  llvm::Type* Int32Like(llvm::Type* ty);
  // tanh likewise (libm's tanhf would be called per lane), within 2 ulp: codegen_tanh.cc.
  llvm::Value* EmitTanh(llvm::Value* x);
  // erf (codegen_erf.cc) and log (codegen_log.cc) likewise, each within 1.1 ulp.
  llvm::Value* EmitErf(llvm::Value* x);
  // `scalar` over the lanes of vector args (one call per lane, the results gathered into a vector);
  // over args themselves when they are scalars.
  llvm::Value* PerLane(const std::vector<llvm::Value*>& args,
                       const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& scalar);
  llvm::Value* EmitLog(llvm::Value* x);
  // `lanes`: elements the access covers (a clamped index stays `lanes` before the end).
  llvm::Value* ElementPtr(const lower::BufferNode* b, const te::Expr& index, bool clamp,
                          int lanes = 1);
  llvm::Value* EmitVectorLoad(const lower::BufferLoadNode* l);
  // Scoped no-alias metadata for the function's argument and workspace buffers (each its own
  // memory: the executor never gives a kernel's inputs and outputs the same storage, and a
  // workspace is a fresh allocation; an alias view shares its target's scope). Without it LLVM
  // cannot vectorise a loop whose loads are gathers, for which it has no run-time overlap test.
  void BeginAliasScopes(const lower::LoweredFunc& f);
  // Tags a load or store of buffer b with b's scope and the others' (locals and constants: none).
  void TagAccess(llvm::Instruction* access, const lower::BufferNode* b);
  // int32_t f(TVMValue*, int32_t*, int32_t, TVMValue*, int32_t*, void*)
  llvm::FunctionType* PackedFuncType();
  llvm::Function* ErrorHelper();
  llvm::Function* GetExtern(const std::string& name, llvm::FunctionType* ty);
  llvm::Value* Str(const std::string& s);
  // Branches to an error block (message prefix + got value) when !ok.
  void Check(llvm::Value* ok, const std::string& prefix, llvm::Value* got);
  // Integers of `bits` at data, elements first, first + step, ... below count, must lie in
  // [-extent, extent) ([0, extent) when non_negative): else the function returns -1 naming the
  // first one outside.
  void EmitIndexCheck(llvm::Value* data, int bits, int64_t count, int64_t extent,
                      const std::string& message, int64_t first = 0, int64_t step = 1,
                      bool non_negative = false);

  llvm::Module* module_;
  llvm::LLVMContext& ctx_;
  Target target_;
  llvm::IRBuilder<> b_;
  llvm::Type* index_ty_;
  llvm::Type* i8_;
  llvm::Type* i32_;
  llvm::Type* i64_;
  llvm::PointerType* ptr_;
  llvm::StructType* dltensor_ty_;
  bool define_module_ctx_;
  llvm::GlobalVariable* module_ctx_ = nullptr;
  llvm::Function* error_helper_ = nullptr;
  std::unordered_map<std::string, llvm::Constant*> strings_;

  // Per-function state.
  llvm::Function* func_ = nullptr;
  llvm::BasicBlock* cleanup_bb_ = nullptr;
  llvm::Value* status_ = nullptr;
  std::string func_name_;
  int closure_count_ = 0;
  // One stack array per function (its parallel loops launch one after another).
  std::unordered_map<llvm::Function*, llvm::Value*> parallel_counters_;
  std::unordered_map<const te::ExprNode*, llvm::Value*> vars_;
  std::unordered_map<const lower::BufferNode*, llvm::Value*> buffers_;
  // Views of stack buffers (LoweredFunc::aliases whose target is a local): resolved where they
  // are used, since each parallel closure has its own stack.
  std::unordered_map<const lower::BufferNode*, const lower::BufferNode*> local_views_;
  std::unordered_map<const lower::BufferNode*, llvm::MDNode*> alias_scope_, noalias_;
  int clamp_depth_ = 0;
  bool exact_float_ = false;  // the function's LoweredFunc::exact_float
  bool index_mode_ = false;
};

}  // namespace ember::compiler::codegen

#endif  // EMBER_COMPILER_CODEGEN_LLVM_CODEGEN_LLVM_H_
