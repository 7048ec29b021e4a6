// CodeGenLLVM: loop IR (compiler/lower/) to LLVM IR, types, expressions and statements.
// The CPU calling convention is in codegen_cpu.cc, parallel loops in codegen_parallel.cc.
#include "codegen_llvm.h"

#include <ember/compiler/ir/weight_layout.h>
#include <llvm/Analysis/VectorUtils.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAArch64.h>
#include <llvm/IR/IntrinsicsARM.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/IR/Verifier.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <stdexcept>
namespace ember::compiler::codegen {

using lower::BufferNode;
using lower::BufferScope;
using lower::ForKind;
using lower::Stmt;
using lower::StmtKind;
using te::BinaryOp;
using te::DataType;
using te::Expr;
using te::ExprKind;

CodeGenLLVM::CodeGenLLVM(llvm::Module* module, const Target& target, bool define_module_ctx)
    : module_(module),
      ctx_(module->getContext()),
      target_(target),
      b_(module->getContext()),
      define_module_ctx_(define_module_ctx) {
  i8_ = llvm::Type::getInt8Ty(ctx_);
  i32_ = llvm::Type::getInt32Ty(ctx_);
  i64_ = llvm::Type::getInt64Ty(ctx_);
  ptr_ = llvm::PointerType::get(ctx_, 0);
  index_ty_ = target.pointer_bits == 32 ? i32_ : i64_;
  auto* device_ty = llvm::StructType::get(ctx_, {i32_, i32_});
  auto* dtype_ty = llvm::StructType::get(ctx_, {i8_, i8_, llvm::Type::getInt16Ty(ctx_)});
  dltensor_ty_ = llvm::StructType::create(ctx_, {ptr_, device_ty, i32_, dtype_ty, ptr_, ptr_, i64_},
                                          "DLTensor");
  b_.setFastMathFlags(FastFloat());
}

llvm::FastMathFlags CodeGenLLVM::FastFloat() {
  // Reassociation lets LLVM vectorise reductions; contraction makes multiply-adds single FMAs.
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setAllowContract();
  return fmf;
}

llvm::Type* CodeGenLLVM::ValueType(DataType t) {
  if (t.lanes > 1) {
    return llvm::FixedVectorType::get(ValueType(te::WithLanes(t, 1)), t.lanes);
  }
  if (te::IsBool(t)) return llvm::Type::getInt1Ty(ctx_);
  if (t.code == kDLFloat) {
    // float16 values are computed in float (CPUs without fp16 arithmetic would widen every
    // operation anyway, rounding after each); memory keeps half (StorageType).
    if (t.bits == 16 || t.bits == 32) return llvm::Type::getFloatTy(ctx_);
    if (t.bits == 64) return llvm::Type::getDoubleTy(ctx_);
    throw std::runtime_error("codegen: unsupported float width " + std::to_string(t.bits));
  }
  if (index_mode_ && t.bits == 64) return index_ty_;
  return llvm::Type::getIntNTy(ctx_, t.bits);
}

llvm::Type* CodeGenLLVM::StorageType(DataType t) {
  if (te::IsBool(t)) {
    if (t.lanes > 1) throw std::runtime_error("codegen: bool vectors have no storage type");
    return i8_;
  }
  if (t.code == kDLFloat && t.bits == 16) {
    llvm::Type* half = llvm::Type::getHalfTy(ctx_);
    return t.lanes > 1 ? llvm::FixedVectorType::get(half, t.lanes) : half;
  }
  bool saved = index_mode_;
  index_mode_ = false;
  llvm::Type* ty = ValueType(t);
  index_mode_ = saved;
  return ty;
}

llvm::Type* CodeGenLLVM::ElementType(const BufferNode* b) {
  // A kernel's float16 scalars and accumulators on the stack stay in float, as it computes.
  if (b->scope == BufferScope::kLocal && te::IsFloat(b->dtype) && b->dtype.bits == 16) {
    return ValueType(b->dtype);
  }
  return StorageType(b->dtype);
}

llvm::Value* CodeGenLLVM::RoundToHalf(llvm::Value* v) {
  llvm::Type* half = b_.getHalfTy();
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType())) {
    half = llvm::FixedVectorType::get(half, vt->getNumElements());
  }
  return b_.CreateFPExt(b_.CreateFPTrunc(v, half), v->getType());
}

llvm::Function* CodeGenLLVM::GetExtern(const std::string& name, llvm::FunctionType* ty) {
  return llvm::cast<llvm::Function>(module_->getOrInsertFunction(name, ty).getCallee());
}

llvm::Value* CodeGenLLVM::Str(const std::string& s) {
  auto it = strings_.find(s);
  if (it != strings_.end()) return it->second;
  llvm::Constant* c = b_.CreateGlobalStringPtr(s, ".str", 0, module_);
  strings_[s] = c;
  return c;
}

llvm::Value* CodeGenLLVM::BufferPtr(const BufferNode* b) {
  auto it = buffers_.find(b);
  if (it != buffers_.end()) return it->second;
  if (b->scope == BufferScope::kConstant) return ConstantBuffer(b);
  if (auto view = local_views_.find(b); view != local_views_.end()) {
    return buffers_[b] = BufferPtr(view->second);
  }
  if (b->scope != BufferScope::kLocal) {
    throw std::runtime_error("codegen: buffer " + b->name + " used outside its scope");
  }
  // Locals live in the entry block of the function being emitted (closures get their own).
  llvm::IRBuilder<> eb(&func_->getEntryBlock(), func_->getEntryBlock().begin());
  llvm::Value* p = eb.CreateAlloca(
      ElementType(b),
      b->size > 1 ? llvm::ConstantInt::get(i32_, static_cast<uint64_t>(b->size)) : nullptr,
      b->name);
  if (b->size > 1) llvm::cast<llvm::AllocaInst>(p)->setAlignment(llvm::Align(64));
  buffers_[b] = p;
  return p;
}

// Read-only data of the module, shared by the function and its parallel closures.
llvm::Value* CodeGenLLVM::ConstantBuffer(const BufferNode* b) {
  llvm::StringRef raw(reinterpret_cast<const char*>(b->bytes.data()), b->bytes.size());
  auto* init = llvm::ConstantDataArray::getString(ctx_, raw, /*AddNull=*/false);
  auto* global = new llvm::GlobalVariable(*module_, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init, b->name);
  global->setAlignment(llvm::Align(64));
  buffers_[b] = global;
  return global;
}

llvm::Value* CodeGenLLVM::ElementPtr(const BufferNode* b, const Expr& index, bool clamp,
                                     int lanes) {
  llvm::Value* base = BufferPtr(b);
  if (b->scope == BufferScope::kLocal && b->size == 1) return base;
  llvm::Value* idx = EmitIndex(index);
  if (clamp && b->size > 0) {
    // Loads in the unselected arm of a select (padding, masked reductions) must stay in bounds.
    idx =
        b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, idx, llvm::ConstantInt::get(index_ty_, 0));
    idx = b_.CreateBinaryIntrinsic(
        llvm::Intrinsic::smin, idx,
        llvm::ConstantInt::get(index_ty_, std::max<int64_t>(0, b->size - lanes)));
  }
  return b_.CreateInBoundsGEP(ElementType(b), base, idx);
}

llvm::Value* CodeGenLLVM::EmitIndex(const Expr& e) {
  bool saved = index_mode_;
  index_mode_ = true;
  llvm::Value* v = Emit(e);
  index_mode_ = saved;
  if (v->getType() != index_ty_) v = CastInt(v, index_ty_, true);
  return v;
}

llvm::Value* CodeGenLLVM::CastInt(llvm::Value* v, llvm::Type* to, bool is_signed) {
  return b_.CreateIntCast(v, to, is_signed);
}

llvm::Value* CodeGenLLVM::EmitCast(DataType to, DataType from, llvm::Value* v) {
  if (to.lanes > 1 && from.lanes == 1) {  // te::Broadcast
    return b_.CreateVectorSplat(to.lanes, EmitCast(te::WithLanes(to, 1), from, v));
  }
  llvm::Type* tt = ValueType(to);
  const bool to_half = te::IsFloat(to) && to.bits == 16 && !(te::IsFloat(from) && from.bits == 16);
  if (v->getType() == tt && te::IsFloat(to) == te::IsFloat(from) && !to_half) return v;
  if (te::IsBool(to)) {
    if (te::IsFloat(from)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (te::IsFloat(to)) {
    llvm::Value* r = te::IsFloat(from) ? b_.CreateFPCast(v, tt)
                     : te::IsInt(from) ? b_.CreateSIToFP(v, tt)
                                       : b_.CreateUIToFP(v, tt);
    // A cast to float16 rounds to it, as the stored value would.
    return to_half ? RoundToHalf(r) : r;
  }
  // integer target
  if (te::IsFloat(from)) {
    return te::IsInt(to) ? b_.CreateFPToSI(v, tt) : b_.CreateFPToUI(v, tt);
  }
  return CastInt(v, tt, te::IsInt(from));
}

llvm::Value* CodeGenLLVM::EmitBitCast(DataType to, DataType from, llvm::Value* v) {
  auto bits_type = [&](DataType t) {
    llvm::Type* word = b_.getIntNTy(te::IsBool(t) ? 8 : t.bits);
    return t.lanes > 1 ? llvm::FixedVectorType::get(word, t.lanes) : word;
  };
  auto stored = [&](DataType t) {  // the type whose bits memory holds
    return te::IsFloat(t) ? StorageType(t) : bits_type(t);
  };
  llvm::Value* bits;
  if (te::IsBool(from)) {
    bits = b_.CreateZExt(v, bits_type(from));
  } else if (te::IsFloat(from)) {
    bits = b_.CreateBitCast(v->getType() == stored(from) ? v : b_.CreateFPTrunc(v, stored(from)),
                            bits_type(from));
  } else {
    bits = CastInt(v, bits_type(from), false);
  }
  if (te::IsBool(to)) return b_.CreateICmpNE(bits, llvm::Constant::getNullValue(bits->getType()));
  if (te::IsFloat(to)) {
    llvm::Value* f = b_.CreateBitCast(bits, stored(to));
    return f->getType() == ValueType(to) ? f : b_.CreateFPExt(f, ValueType(to));
  }
  return CastInt(bits, ValueType(to), te::IsInt(to));
}

llvm::Value* CodeGenLLVM::Emit(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      llvm::Type* t = ValueType(e.dtype());
      return llvm::ConstantInt::get(t, static_cast<uint64_t>(e.as<te::IntImmNode>()->value), true);
    }
    case ExprKind::kFloatImm: {
      llvm::Value* c = llvm::ConstantFP::get(ValueType(e.dtype()), e.as<te::FloatImmNode>()->value);
      return e.dtype().bits == 16 ? RoundToHalf(c) : c;
    }
    case ExprKind::kVar: {
      auto it = vars_.find(e.get());
      if (it == vars_.end()) {
        throw std::runtime_error("codegen: unbound variable " + e.as<te::VarNode>()->name + " in " +
                                 func_name_);
      }
      llvm::Value* v = it->second;
      llvm::Type* want = ValueType(e.dtype());
      if (v->getType() != want) v = CastInt(v, want, true);
      return v;
    }
    case ExprKind::kBinary:
      return EmitBinary(e.as<te::BinaryNode>());
    case ExprKind::kNot:
      return b_.CreateNot(Emit(e.as<te::NotNode>()->a));
    case ExprKind::kSelect: {
      auto* s = e.as<te::SelectNode>();
      llvm::Value* c = Emit(s->cond);
      ++clamp_depth_;
      llvm::Value* t = Emit(s->true_value);
      llvm::Value* f = Emit(s->false_value);
      --clamp_depth_;
      return b_.CreateSelect(c, t, f);
    }
    case ExprKind::kCast: {
      auto* c = e.as<te::CastNode>();
      const bool to_integer = !te::IsFloat(e.dtype()) && !te::IsBool(e.dtype());
      if (to_integer && te::IsFloat(c->value.dtype())) {
        if (llvm::Value* q = EmitRoundedToInteger(e.dtype(), c->value)) return q;
      }
      llvm::Value* v = to_integer && te::IsFloat(c->value.dtype()) ? EmitClampToInteger(c->value)
                                                                   : Emit(c->value);
      return EmitCast(e.dtype(), c->value.dtype(), v);
    }
    case ExprKind::kCall:
      return EmitCall(e.as<te::CallNode>());
    case ExprKind::kBufferLoad: {
      auto* l = e.as<lower::BufferLoadNode>();
      const BufferNode* buf = l->buffer.get();
      if (e.dtype().lanes != buf->dtype.lanes) return EmitVectorLoad(l);
      llvm::Value* p = ElementPtr(buf, l->index, clamp_depth_ > 0);
      llvm::Type* st = ElementType(buf);
      llvm::LoadInst* v = b_.CreateLoad(st, p);
      TagAccess(v, buf);
      if (te::IsBool(buf->dtype)) return b_.CreateICmpNE(v, llvm::ConstantInt::get(st, 0));
      llvm::Type* want = ValueType(buf->dtype);
      if (want == st) return v;
      return st->isFloatingPointTy() ? b_.CreateFPExt(v, want)
                                     : CastInt(v, want, te::IsInt(buf->dtype));
    }
    case ExprKind::kTensorLoad:
    case ExprKind::kReduce:
      throw std::runtime_error("codegen: te node reached codegen unlowered in " + func_name_);
  }
  return nullptr;
}

void CodeGenLLVM::BeginAliasScopes(const lower::LoweredFunc& f) {
  alias_scope_.clear();
  noalias_.clear();
  llvm::MDBuilder mdb(ctx_);
  // Unnamed: identical kernels must stay identical for the structural key (kernel_key.cc).
  llvm::MDNode* domain = mdb.createAnonymousAliasScopeDomain();
  std::vector<std::pair<const BufferNode*, llvm::MDNode*>> roots;
  for (const lower::ArgInfo& a : f.args) {
    roots.emplace_back(a.buffer.get(), mdb.createAnonymousAliasScope(domain));
  }
  for (const lower::Buffer& w : f.workspaces) {
    roots.emplace_back(w.get(), mdb.createAnonymousAliasScope(domain));
  }
  for (const auto& [buffer, scope] : roots) {
    std::vector<llvm::Metadata*> others;
    for (const auto& other : roots) {
      if (other.second != scope) others.push_back(other.second);
    }
    alias_scope_[buffer] = llvm::MDNode::get(ctx_, {scope});
    noalias_[buffer] = llvm::MDNode::get(ctx_, others);
  }
  for (const auto& [view, target] : f.aliases) {
    if (alias_scope_.count(target.get()) == 0) continue;
    alias_scope_[view.get()] = alias_scope_.at(target.get());
    noalias_[view.get()] = noalias_.at(target.get());
  }
}

void CodeGenLLVM::TagAccess(llvm::Instruction* access, const BufferNode* b) {
  auto it = alias_scope_.find(b);
  if (it == alias_scope_.end()) return;
  access->setMetadata(llvm::LLVMContext::MD_alias_scope, it->second);
  access->setMetadata(llvm::LLVMContext::MD_noalias, noalias_.at(b));
}

llvm::Value* CodeGenLLVM::EmitVectorLoad(const lower::BufferLoadNode* l) {
  const BufferNode* buf = l->buffer.get();
  const int lanes = l->dtype.lanes;
  if (buf->dtype.lanes != 1) {
    throw std::runtime_error("codegen: vector load from " + buf->name + " of type " +
                             te::DataTypeName(buf->dtype) + " in " + func_name_);
  }
  llvm::Value* p = ElementPtr(buf, l->index, clamp_depth_ > 0, lanes);
  if (te::IsBool(buf->dtype)) {  // a byte per element in memory: lanes bytes, each != 0
    llvm::Type* bytes = llvm::FixedVectorType::get(i8_, static_cast<unsigned>(lanes));
    llvm::LoadInst* v = b_.CreateAlignedLoad(bytes, p, llvm::Align(1));
    TagAccess(v, buf);
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(bytes));
  }
  // Only element alignment is known: the vector's own alignment would allow aligned moves.
  const bool half_in_memory =
      buf->scope != BufferScope::kLocal && te::IsFloat(buf->dtype) && buf->dtype.bits == 16;
  llvm::Type* want = ValueType(l->dtype);
  llvm::Type* stored = half_in_memory ? StorageType(l->dtype) : want;
  llvm::LoadInst* v = b_.CreateAlignedLoad(stored, p, llvm::Align(te::StorageBytes(buf->dtype)));
  TagAccess(v, buf);
  return half_in_memory ? b_.CreateFPExt(v, want) : v;
}

llvm::Value* CodeGenLLVM::EmitBinary(const te::BinaryNode* bn) {
  DataType t = bn->a.dtype();
  llvm::Value* a = Emit(bn->a);
  llvm::Value* b = Emit(bn->b);
  bool is_float = te::IsFloat(t);
  bool is_signed = te::IsInt(t);
  switch (bn->op) {
    case BinaryOp::kAdd:
      return is_float ? b_.CreateFAdd(a, b) : b_.CreateAdd(a, b);
    case BinaryOp::kSub:
      return is_float ? b_.CreateFSub(a, b) : b_.CreateSub(a, b);
    case BinaryOp::kMul:
      return is_float ? b_.CreateFMul(a, b) : b_.CreateMul(a, b);
    case BinaryOp::kDiv:
      if (is_float) return b_.CreateFDiv(a, b);
      return EmitIntegerDivision(bn->op, a, b, is_signed);
    case BinaryOp::kMod:
      if (is_float) return b_.CreateFRem(a, b);
      return EmitIntegerDivision(bn->op, a, b, is_signed);
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod: {
      if (is_float) {
        llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        if (bn->op == BinaryOp::kFloorDiv) return q;
        return b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      return EmitIntegerDivision(bn->op, a, b, is_signed);
    }
    case BinaryOp::kMin:
    case BinaryOp::kMax: {
      bool mx = bn->op == BinaryOp::kMax;
      if (is_float) return EmitFloatMinMax(mx, a, b);
      llvm::Intrinsic::ID id = mx ? (is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax)
                                  : (is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin);
      return b_.CreateBinaryIntrinsic(id, a, b);
    }
    case BinaryOp::kEQ:
      return is_float ? b_.CreateFCmpOEQ(a, b) : b_.CreateICmpEQ(a, b);
    case BinaryOp::kNE:
      return is_float ? b_.CreateFCmpUNE(a, b) : b_.CreateICmpNE(a, b);
    case BinaryOp::kLT:
      return is_float    ? b_.CreateFCmpOLT(a, b)
             : is_signed ? b_.CreateICmpSLT(a, b)
                         : b_.CreateICmpULT(a, b);
    case BinaryOp::kLE:
      return is_float    ? b_.CreateFCmpOLE(a, b)
             : is_signed ? b_.CreateICmpSLE(a, b)
                         : b_.CreateICmpULE(a, b);
    case BinaryOp::kGT:
      return is_float    ? b_.CreateFCmpOGT(a, b)
             : is_signed ? b_.CreateICmpSGT(a, b)
                         : b_.CreateICmpUGT(a, b);
    case BinaryOp::kGE:
      return is_float    ? b_.CreateFCmpOGE(a, b)
             : is_signed ? b_.CreateICmpSGE(a, b)
                         : b_.CreateICmpUGE(a, b);
    case BinaryOp::kAnd:  // the operands are bools here (te::Binary), so logical is bitwise
    case BinaryOp::kBitAnd:
      return b_.CreateAnd(a, b);
    case BinaryOp::kOr:
    case BinaryOp::kBitOr:
      return b_.CreateOr(a, b);
    case BinaryOp::kXor:
    case BinaryOp::kBitXor:
      return b_.CreateXor(a, b);
  }
  return nullptr;
}

llvm::Value* CodeGenLLVM::EmitFloatMinMax(bool max, llvm::Value* a, llvm::Value* b) {
  // NaN in `a` propagates (numpy-like) and the compare+select pattern vectorises.
  const llvm::APFloat* c = nullptr;
  bool aarch64 = target_.triple.rfind("aarch64", 0) == 0;
  if (aarch64 && llvm::PatternMatch::match(b, llvm::PatternMatch::m_APFloat(c)) && !c->isNaN() &&
      !(c->isZero() && c->isNegative() == max)) {
    // Against a constant `b` that is no NaN, and no zero of the sign the select returns where
    // fmax/fmin pick the other one (max(+0, -0), min(-0, +0)), the select is exactly
    // llvm.maximum/minimum: one fmax/fmin instead of a compare and a select.
    return b_.CreateBinaryIntrinsic(max ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum, a,
                                    b);
  }
  llvm::Value* pick_a = max ? b_.CreateFCmpUGT(a, b) : b_.CreateFCmpULT(a, b);
  return b_.CreateSelect(pick_a, a, b);
}

llvm::Value* CodeGenLLVM::EmitClampToInteger(const Expr& e) {
  // What the clamp does with a NaN or with -0 against +0 cannot reach the integer: converting a
  // NaN is poison whatever the clamp returns, and -0 and +0 convert alike. So each Min/Max may be
  // minnum/maxnum with no-NaNs and no-signed-zeros: one vminps/vmaxps on x86 where the
  // NaN-propagating compare and select take two (a requantization's clamp to [0, 255]).
  auto* bn = e.as<te::BinaryNode>();
  if (bn == nullptr || (bn->op != BinaryOp::kMin && bn->op != BinaryOp::kMax)) return Emit(e);
  llvm::Value* a = EmitClampToInteger(bn->a);
  return EmitIntegerBound(bn->op, a, Emit(bn->b));
}

llvm::Value* CodeGenLLVM::EmitIntegerBound(BinaryOp op, llvm::Value* a, llvm::Value* b) {
  auto* bound = llvm::cast<llvm::CallInst>(b_.CreateBinaryIntrinsic(
      op == BinaryOp::kMax ? llvm::Intrinsic::maxnum : llvm::Intrinsic::minnum, a, b));
  llvm::FastMathFlags flags;
  flags.setNoNaNs();
  flags.setNoSignedZeros();
  bound->setFastMathFlags(flags);
  return bound;
}

namespace {

// The value of a float literal, or of a vector of one (a broadcast), that is an integer small
// enough for float32 sums with another such to stay exact.
bool SmallIntegerLiteral(const Expr& e, double* v) {
  const Expr* x = &e;
  if (auto* c = e.as<te::CastNode>(); c != nullptr && c->value.dtype().lanes == 1) x = &c->value;
  double value;
  if (auto* f = x->as<te::FloatImmNode>()) {
    value = f->value;
  } else if (auto* i = x->as<te::IntImmNode>()) {
    value = static_cast<double>(i->value);
  } else {
    return false;
  }
  if (value != std::nearbyint(value) || std::fabs(value) > (1 << 22)) return false;
  *v = value;
  return true;
}

}  // namespace

llvm::Value* CodeGenLLVM::EmitRoundedToInteger(te::DataType to, const Expr& e) {
  // integer(clamps(round(x) + c)), clamps by literal integers (a requantization: ONNX
  // QuantizeLinear's round half to even, zero point and saturation) as
  // lrint(clamps'(x)) + c, each bound less c: rounding commutes with clamping to integers and
  // adding an integer, and every value involved is an exact float. On x86, lrint is one
  // vcvtps2dq in the default rounding mode (round half to even, which generated code and the
  // runtime never change) where roundeven and a truncating conversion take two instructions and
  // the float add a third; on AArch64 fcvtns rounds half to even itself.
  const llvm::Triple triple(target_.triple);
  if ((!triple.isX86() && !triple.isAArch64()) || to.bits > 32 || e.dtype().bits != 32) {
    return nullptr;
  }
  std::vector<std::pair<BinaryOp, double>> clamps;  // outermost first
  const Expr* core = &e;
  double bound;
  for (auto* bn = core->as<te::BinaryNode>();
       bn != nullptr && (bn->op == BinaryOp::kMin || bn->op == BinaryOp::kMax) &&
       SmallIntegerLiteral(bn->b, &bound);
       bn = core->as<te::BinaryNode>()) {
    clamps.emplace_back(bn->op, bound);
    core = &bn->a;
  }
  // Bounded on both sides, so that every result fits int32 (a conversion of a larger value to a
  // wider or unsigned type would be defined where lrint's is not).
  auto bounded_by = [&](BinaryOp op) {
    return std::any_of(clamps.begin(), clamps.end(), [&](const auto& c) { return c.first == op; });
  };
  if (!bounded_by(BinaryOp::kMin) || !bounded_by(BinaryOp::kMax)) return nullptr;
  double offset = 0;
  if (auto* add = core->as<te::BinaryNode>();
      add != nullptr && add->op == BinaryOp::kAdd && SmallIntegerLiteral(add->b, &offset)) {
    core = &add->a;
  }
  auto* round = core->as<te::CallNode>();
  if (round == nullptr || round->fn != te::Intrinsic::kRound) return nullptr;
  llvm::Value* x = Emit(round->args[0]);
  for (auto it = clamps.rbegin(); it != clamps.rend(); ++it) {
    x = EmitIntegerBound(it->first, x, llvm::ConstantFP::get(x->getType(), it->second - offset));
  }
  llvm::Type* words = i32_;
  if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(x->getType())) {
    words = llvm::FixedVectorType::get(i32_, vt->getNumElements());
  }
  llvm::Value* r =
      triple.isX86()
          ? b_.CreateIntrinsic(llvm::Intrinsic::lrint, {words, x->getType()}, {x})
          : b_.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_fcvtns, {words, x->getType()}, {x});
  if (offset != 0) r = b_.CreateAdd(r, llvm::ConstantInt::get(words, static_cast<int64_t>(offset)));
  return EmitCast(to, te::WithLanes(te::Int(32), e.dtype().lanes), r);
}

llvm::Value* CodeGenLLVM::EmitUnaryIntrinsic(llvm::Intrinsic::ID id, llvm::Value* x) {
  // LLVM 19 cannot select a vector roundeven for 32-bit ARM (NEON has no VRINT before ARMv8),
  // and its vectorisers form one from scalar ones: there each lane calls libm's roundeven,
  // marked no-builtin so that it stays a call.
  if (id != llvm::Intrinsic::roundeven || target_.triple.rfind("arm", 0) != 0) {
    return b_.CreateUnaryIntrinsic(id, x);
  }
  llvm::Type* scalar = x->getType()->getScalarType();
  auto* fn = GetExtern(scalar->isDoubleTy() ? "roundeven" : "roundevenf",
                       llvm::FunctionType::get(scalar, {scalar}, false));
  return PerLane({x}, [&](const std::vector<llvm::Value*>& v) -> llvm::Value* {
    llvm::CallInst* call = b_.CreateCall(fn, v);
    call->addFnAttr(llvm::Attribute::NoBuiltin);
    return call;
  });
}

llvm::Value* CodeGenLLVM::PerLane(
    const std::vector<llvm::Value*>& args,
    const std::function<llvm::Value*(const std::vector<llvm::Value*>&)>& scalar) {
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(args.at(0)->getType());
  if (vt == nullptr) return scalar(args);
  llvm::Value* out = nullptr;
  for (unsigned lane = 0; lane < vt->getNumElements(); ++lane) {
    std::vector<llvm::Value*> lanes;
    for (llvm::Value* a : args) lanes.push_back(b_.CreateExtractElement(a, lane));
    llvm::Value* r = scalar(lanes);
    if (out == nullptr)
      out = llvm::PoisonValue::get(llvm::FixedVectorType::get(r->getType(), vt->getNumElements()));
    out = b_.CreateInsertElement(out, r, lane);
  }
  return out;
}

namespace {

// The shuffle mask that puts a dot operand of `lanes` four-byte lanes into halves order
// (te::kDotS8S8Halves: bytes 0-1 of every lane in the first half, bytes 2-3 in the second), or
// with from_halves back out of it.
std::vector<int> HalvesOrder(int lanes, bool from_halves) {
  std::vector<int> into(lanes * 4), out_of(lanes * 4);
  for (int lane = 0; lane < lanes; ++lane) {
    for (int byte = 0; byte < 4; ++byte) {
      const int standard = 4 * lane + byte;
      const int halves = static_cast<int>(Int8HalvesIndex(lane, byte, lanes));
      into[halves] = standard;
      out_of[standard] = halves;
    }
  }
  return from_halves ? out_of : into;
}

}  // namespace

std::pair<llvm::Value*, llvm::Value*> CodeGenLLVM::EmitHalves(llvm::Value* v, bool in_halves) {
  // A broadcast word: each half is one of its halfwords broadcast (dup by lane), not the
  // vector reordered per half.
  if (llvm::Value* word = in_halves ? nullptr : llvm::getSplatValue(v); word != nullptr) {
    auto* halfwords = llvm::FixedVectorType::get(b_.getInt16Ty(), 4);
    llvm::Value* pair = b_.CreateBitCast(
        b_.CreateInsertElement(llvm::PoisonValue::get(llvm::FixedVectorType::get(i32_, 2)), word,
                               uint64_t{0}),
        halfwords);
    auto broadcast = [&](int h) {
      return b_.CreateBitCast(b_.CreateShuffleVector(pair, std::vector<int>(4, h)),
                              llvm::FixedVectorType::get(i8_, 8));
    };
    return {broadcast(0), broadcast(1)};
  }
  llvm::Value* ordered = b_.CreateBitCast(v, llvm::FixedVectorType::get(i8_, 16));
  const std::vector<int> lo = {0, 1, 2, 3, 4, 5, 6, 7}, hi = {8, 9, 10, 11, 12, 13, 14, 15};
  if (!in_halves) ordered = b_.CreateShuffleVector(ordered, HalvesOrder(4, false));
  return {b_.CreateShuffleVector(ordered, lo), b_.CreateShuffleVector(ordered, hi)};
}

llvm::Value* CodeGenLLVM::EmitWideningDot(llvm::Value* acc, llvm::Value* a, llvm::Value* b,
                                          bool b_in_halves) {
  // In halves order each half's widening multiply (smull, eight 16-bit products: exact) holds
  // each lane's products as adjacent pairs, which the pairwise widening add (sadalp) adds into
  // that lane.
  auto* halves = llvm::FixedVectorType::get(b_.getInt16Ty(), 8);
  auto* sums = llvm::FixedVectorType::get(i32_, 4);
  const auto [a_lo, a_hi] = EmitHalves(a, false);
  const auto [b_lo, b_hi] = EmitHalves(b, b_in_halves);
  const bool arm32 = llvm::Triple(target_.triple).isARM();
  auto add_pairs = [&](llvm::Value* to, llvm::Value* products) -> llvm::Value* {  // sadalp
    if (arm32) {
      return b_.CreateIntrinsic(llvm::Intrinsic::arm_neon_vpadals, {sums, halves}, {to, products});
    }
    return b_.CreateAdd(
        to, b_.CreateIntrinsic(llvm::Intrinsic::aarch64_neon_saddlp, {sums, halves}, {products}));
  };
  auto multiply = [&](llvm::Value* x, llvm::Value* y) {  // smull
    return b_.CreateMul(b_.CreateSExt(x, halves), b_.CreateSExt(y, halves));
  };
  llvm::Value* lo = multiply(a_lo, b_lo);
  llvm::Value* hi = multiply(a_hi, b_hi);
  // DotS8S8Halves: the halves' products summed in int16 first (smlal), one sadalp for both.
  if (b_in_halves) return add_pairs(acc, b_.CreateAdd(lo, hi));
  return add_pairs(add_pairs(acc, lo), hi);
}

llvm::Value* CodeGenLLVM::EmitInt8Dot(te::Intrinsic fn, llvm::Value* acc, llvm::Value* a,
                                      llvm::Value* b) {
  const bool saturating_pairs = fn == te::Intrinsic::kDotU8S8Pairs;
  const bool halves = fn == te::Intrinsic::kDotS8S8Halves;
  const bool a_signed = fn == te::Intrinsic::kDotS8S8 || halves;
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(acc->getType());
  const unsigned lanes = vt != nullptr ? vt->getNumElements() : 1;
  const int bits = static_cast<int>(lanes) * 32;
  auto* bytes = llvm::FixedVectorType::get(i8_, lanes * 4);
  const llvm::Triple triple(target_.triple);
  if (a_signed && bits == 128 && target_.int8_widening_bits >= bits) {
    return EmitWideningDot(acc, a, b, halves);
  }
  if (halves) {  // b back in the order the other dots read
    b = b_.CreateBitCast(b_.CreateShuffleVector(b_.CreateBitCast(b, bytes),
                                                HalvesOrder(static_cast<int>(lanes), true)),
                         b->getType());
  }
  if (triple.isAArch64() && bits == 128 && target_.int8_dot_bits >= bits && !saturating_pairs &&
      (a_signed || target_.int8_dot_u8s8)) {
    const llvm::Intrinsic::ID id =
        a_signed ? llvm::Intrinsic::aarch64_neon_sdot : llvm::Intrinsic::aarch64_neon_usdot;
    return b_.CreateIntrinsic(id, {vt, bytes},
                              {acc, b_.CreateBitCast(a, bytes), b_.CreateBitCast(b, bytes)});
  }
  const bool x86 = triple.isX86() && !a_signed && (bits == 512 || bits == 256);
  if (x86 && !saturating_pairs && target_.int8_dot_bits >= bits) {
    // At 256 bits the same intrinsic selects AVX-VNNI's encoding where AVX512VL is absent.
    const auto id = bits == 512 ? llvm::Intrinsic::x86_avx512_vpdpbusd_512
                                : llvm::Intrinsic::x86_avx512_vpdpbusd_256;
    return b_.CreateIntrinsic(id, {}, {acc, a, b});
  }
  if (x86 && saturating_pairs && target_.int8_pair_bits >= bits) {
    auto* halves = llvm::FixedVectorType::get(b_.getInt16Ty(), lanes * 2);
    const bool wide = bits == 512;
    llvm::Value* pairs = b_.CreateIntrinsic(
        wide ? llvm::Intrinsic::x86_avx512_pmaddubs_w_512 : llvm::Intrinsic::x86_avx2_pmadd_ub_sw,
        {}, {b_.CreateBitCast(a, bytes), b_.CreateBitCast(b, bytes)});
    llvm::Value* quads = b_.CreateIntrinsic(
        wide ? llvm::Intrinsic::x86_avx512_pmaddw_d_512 : llvm::Intrinsic::x86_avx2_pmadd_wd, {},
        {pairs, llvm::ConstantInt::get(halves, 1)});
    return b_.CreateAdd(acc, quads);
  }
  // Elsewhere by definition: the bytes widened (a's unsigned, or signed for kDotS8S8, b's
  // signed), multiplied, each pair of products saturated to int16 when asked, and each lane's
  // products added to it.
  auto* wide = llvm::FixedVectorType::get(i32_, lanes * 4);
  llvm::Value* a_bytes = b_.CreateBitCast(a, bytes);
  llvm::Value* products =
      b_.CreateMul(a_signed ? b_.CreateSExt(a_bytes, wide) : b_.CreateZExt(a_bytes, wide),
                   b_.CreateSExt(b_.CreateBitCast(b, bytes), wide));
  // Every `stride`-th element of `from` from k on, `count` of them.
  auto take = [&](llvm::Value* from, unsigned k, unsigned stride, unsigned count) {
    std::vector<int> mask;
    for (unsigned i = 0; i < count; ++i) mask.push_back(static_cast<int>(i * stride + k));
    return b_.CreateShuffleVector(from, mask);
  };
  unsigned terms = 4;
  if (saturating_pairs) {
    llvm::Value* sums =
        b_.CreateAdd(take(products, 0, 2, lanes * 2), take(products, 1, 2, lanes * 2));
    auto* pair_type = llvm::FixedVectorType::get(i32_, lanes * 2);
    sums = b_.CreateSelect(b_.CreateICmpSGT(sums, llvm::ConstantInt::get(pair_type, 32767)),
                           llvm::ConstantInt::get(pair_type, 32767), sums);
    sums = b_.CreateSelect(b_.CreateICmpSLT(sums, llvm::ConstantInt::get(pair_type, -32768)),
                           llvm::ConstantInt::get(pair_type, -32768), sums);
    products = sums;
    terms = 2;
  }
  for (unsigned k = 0; k < terms; ++k) {
    llvm::Value* part = take(products, k, terms, lanes);
    if (vt == nullptr) part = b_.CreateExtractElement(part, uint64_t{0});
    acc = b_.CreateAdd(acc, part);
  }
  return acc;
}

llvm::Value* CodeGenLLVM::EmitTransposeByteRows(llvm::Value* v) {
  const unsigned n = llvm::cast<llvm::FixedVectorType>(v->getType())->getNumElements();
  auto* bytes = llvm::FixedVectorType::get(i8_, n * 4);
  std::vector<int> mask;
  for (unsigned i = 0; i < n; ++i) {
    for (unsigned k = 0; k < 4; ++k) mask.push_back(static_cast<int>(k * n + i));
  }
  return b_.CreateBitCast(b_.CreateShuffleVector(b_.CreateBitCast(v, bytes), mask), v->getType());
}

llvm::Value* CodeGenLLVM::EmitIntegerDivision(te::BinaryOp op, llvm::Value* a, llvm::Value* b,
                                              bool is_signed) {
  // A division by zero, or the one signed overflow (MIN / -1), is undefined in LLVM and traps on
  // x86 (SIGFPE: a uint8 Div of data holding a zero killed ember-run). Those divide by 1 instead,
  // and a quotient by zero is 0 (numpy's answer; a remainder by 1 is 0 already), so the result
  // of every input is defined. LLVM drops the selects where the divisor is a nonzero constant,
  // as in every index computation.
  using te::BinaryOp;
  llvm::Type* ty = a->getType();
  llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
  llvm::Value* one = llvm::ConstantInt::get(ty, 1);
  llvm::Value* by_zero = b_.CreateICmpEQ(b, zero);
  llvm::Value* bad = by_zero;
  if (is_signed) {
    const unsigned bits = ty->getScalarSizeInBits();
    llvm::Value* min = llvm::ConstantInt::get(ty, llvm::APInt::getSignedMinValue(bits));
    llvm::Value* minus_one = llvm::ConstantInt::getSigned(ty, -1);
    bad = b_.CreateOr(bad, b_.CreateAnd(b_.CreateICmpEQ(a, min), b_.CreateICmpEQ(b, minus_one)));
  }
  llvm::Value* d = b_.CreateSelect(bad, one, b);
  const bool quotient = op == BinaryOp::kDiv || op == BinaryOp::kFloorDiv;
  llvm::Value* q = is_signed ? b_.CreateSDiv(a, d) : b_.CreateUDiv(a, d);
  llvm::Value* r = is_signed ? b_.CreateSRem(a, d) : b_.CreateURem(a, d);
  const bool floor = op == BinaryOp::kFloorDiv || op == BinaryOp::kFloorMod;
  if (is_signed && floor) {  // C truncates toward zero; floor moves a remainder of the wrong sign
    llvm::Value* adjust =
        b_.CreateAnd(b_.CreateICmpNE(r, zero),
                     b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(d, zero)));
    q = b_.CreateSelect(adjust, b_.CreateSub(q, one), q);
    r = b_.CreateSelect(adjust, b_.CreateAdd(r, d), r);
  }
  return quotient ? b_.CreateSelect(by_zero, zero, q) : r;
}

llvm::Value* CodeGenLLVM::MulAdd(llvm::Value* a, llvm::Value* b, llvm::Value* c) {
  return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {a->getType()}, {a, b, c});
}

llvm::Value* CodeGenLLVM::EmitStreamBase(llvm::Value* index) {
  // An empty asm that returns its operand in the same register: no instruction, but a value
  // scalar evolution cannot see through. It reads no memory, so LICM and CSE still hoist and
  // share it.
  auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(index->getType(), {index->getType()},
                                                          /*isVarArg=*/false),
                                  "", "=r,0", /*hasSideEffects=*/false);
  llvm::CallInst* call = b_.CreateCall(fn, {index});
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  return call;
}

llvm::Value* CodeGenLLVM::EmitCall(const te::CallNode* c) {
  using te::Intrinsic;
  DataType t = c->args[0].dtype();
  std::vector<llvm::Value*> args;
  for (auto& a : c->args) args.push_back(Emit(a));
  llvm::Value* x = args[0];
  llvm::Type* ty = x->getType();
  if (c->fn == Intrinsic::kDotU8S8 || c->fn == Intrinsic::kDotU8S8Pairs ||
      c->fn == Intrinsic::kDotS8S8 || c->fn == Intrinsic::kDotS8S8Halves) {
    return EmitInt8Dot(c->fn, args.at(0), args.at(1), args.at(2));
  }
  if (c->fn == Intrinsic::kMulAddExact) {
    return MulAdd(args.at(0), args.at(1), args.at(2));
  }
  if (c->fn == Intrinsic::kLane) return b_.CreateExtractElement(x, args.at(1));
  if (c->fn == Intrinsic::kBitCast) return EmitBitCast(c->dtype, t, x);
  if (c->fn == Intrinsic::kTransposeByteRows) return EmitTransposeByteRows(x);
  if (c->fn == Intrinsic::kStreamBase) return EmitStreamBase(x);
  if (c->fn == Intrinsic::kMaximum || c->fn == Intrinsic::kMinimum) {
    return b_.CreateBinaryIntrinsic(
        c->fn == Intrinsic::kMaximum ? llvm::Intrinsic::maximum : llvm::Intrinsic::minimum,
        args.at(0), args.at(1));
  }
  if (c->fn == Intrinsic::kShuffle) {
    std::vector<int> mask;
    for (size_t k = 2; k < c->args.size(); ++k) {
      mask.push_back(static_cast<int>(c->args[k].as<te::IntImmNode>()->value));
    }
    return b_.CreateShuffleVector(args.at(0), args.at(1), mask);
  }
  bool is_float = te::IsFloat(t);
  auto unary = [&](llvm::Intrinsic::ID id) { return EmitUnaryIntrinsic(id, x); };
  // exp, log, tanh and erf of float32 as arithmetic, which vectorises (libm is called per lane),
  // unless the function asked for exact float operations.
  const bool as_arithmetic = !exact_float_ && ty->getScalarType()->isFloatTy();
  auto libm = [&](const char* name) -> llvm::Value* {
    // float16 goes through float; float64 uses the double variant; a vector calls it per lane.
    llvm::Type* st = ty->getScalarType();
    bool dbl = st->isDoubleTy();
    llvm::Type* ct = dbl ? st : b_.getFloatTy();
    std::string n = dbl ? name : std::string(name) + "f";
    std::vector<llvm::Type*> ptys(args.size(), ct);
    auto* fn = GetExtern(n, llvm::FunctionType::get(ct, ptys, false));
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
    return PerLane(args, [&](const std::vector<llvm::Value*>& lane) {
      std::vector<llvm::Value*> cargs;
      for (auto* a : lane) cargs.push_back(a->getType() == ct ? a : b_.CreateFPCast(a, ct));
      llvm::Value* r = b_.CreateCall(fn, cargs);
      return r->getType() == st ? r : b_.CreateFPCast(r, st);
    });
  };
  if (!is_float && c->fn != Intrinsic::kSign && c->fn != Intrinsic::kFabs) {
    // Integer math: go through double (pow on ints, etc.).
    llvm::Type* dt = b_.getDoubleTy();
    std::vector<llvm::Value*> dargs;
    for (size_t i = 0; i < args.size(); ++i) {
      dargs.push_back(te::IsInt(c->args[i].dtype()) ? b_.CreateSIToFP(args[i], dt)
                                                    : b_.CreateUIToFP(args[i], dt));
    }
    args = dargs;
    x = args[0];
    ty = dt;
    llvm::Value* r = nullptr;
    switch (c->fn) {
      case Intrinsic::kPow:
        r = b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
        break;
      case Intrinsic::kIsNan:
      case Intrinsic::kIsInf:
        return b_.getFalse();
      default:
        r = libm("sqrt");
        break;
    }
    return te::IsInt(c->dtype) ? b_.CreateFPToSI(r, ValueType(c->dtype))
                               : b_.CreateFPToUI(r, ValueType(c->dtype));
  }
  switch (c->fn) {
    case Intrinsic::kExp:
      return as_arithmetic ? EmitExp(x) : unary(llvm::Intrinsic::exp);
    case Intrinsic::kLog:
      return as_arithmetic ? EmitLog(x) : unary(llvm::Intrinsic::log);
    case Intrinsic::kSqrt:
      return unary(llvm::Intrinsic::sqrt);
    case Intrinsic::kFloor:
      return unary(llvm::Intrinsic::floor);
    case Intrinsic::kCeil:
      return unary(llvm::Intrinsic::ceil);
    case Intrinsic::kRound:
      return unary(llvm::Intrinsic::roundeven);
    case Intrinsic::kFabs:
      if (!is_float) {
        if (!te::IsInt(t)) return x;
        return b_.CreateBinaryIntrinsic(llvm::Intrinsic::abs, x, b_.getFalse());
      }
      return unary(llvm::Intrinsic::fabs);
    case Intrinsic::kSin:
      return unary(llvm::Intrinsic::sin);
    case Intrinsic::kCos:
      return unary(llvm::Intrinsic::cos);
    case Intrinsic::kPow:
      return b_.CreateBinaryIntrinsic(llvm::Intrinsic::pow, args[0], args[1]);
    case Intrinsic::kTanh:
      return as_arithmetic ? EmitTanh(x) : libm("tanh");
    case Intrinsic::kErf:
      return as_arithmetic ? EmitErf(x) : libm("erf");
    case Intrinsic::kTan:
      return libm("tan");
    case Intrinsic::kAsin:
      return libm("asin");
    case Intrinsic::kAcos:
      return libm("acos");
    case Intrinsic::kAtan:
      return libm("atan");
    case Intrinsic::kSinh:
      return libm("sinh");
    case Intrinsic::kCosh:
      return libm("cosh");
    case Intrinsic::kAsinh:
      return libm("asinh");
    case Intrinsic::kAcosh:
      return libm("acosh");
    case Intrinsic::kAtanh:
      return libm("atanh");
    case Intrinsic::kSigmoid: {
      llvm::Value* one = llvm::ConstantFP::get(ty, 1.0);
      llvm::Value* minus = b_.CreateFNeg(x);
      llvm::Value* e =
          as_arithmetic ? EmitExp(minus) : b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, minus);
      return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
    }
    case Intrinsic::kIsNan:
      return b_.CreateFCmpUNO(x, x);
    case Intrinsic::kIsInf:
      return b_.CreateFCmpOEQ(unary(llvm::Intrinsic::fabs), llvm::ConstantFP::getInfinity(ty));
    case Intrinsic::kSign: {
      if (is_float) {
        llvm::Value* zero = llvm::ConstantFP::get(ty, 0.0);
        llvm::Value* pos =
            b_.CreateSelect(b_.CreateFCmpOGT(x, zero), llvm::ConstantFP::get(ty, 1.0), zero);
        return b_.CreateSelect(b_.CreateFCmpOLT(x, zero), llvm::ConstantFP::get(ty, -1.0), pos);
      }
      llvm::Value* zero = llvm::ConstantInt::get(ty, 0);
      llvm::Value* pos =
          b_.CreateSelect(b_.CreateICmpNE(x, zero), llvm::ConstantInt::get(ty, 1), zero);
      if (!te::IsInt(t)) return pos;
      return b_.CreateSelect(b_.CreateICmpSLT(x, zero), llvm::ConstantInt::get(ty, -1, true), pos);
    }
    case Intrinsic::kDotU8S8:  // emitted above
    case Intrinsic::kDotU8S8Pairs:
    case Intrinsic::kMulAddExact:
    case Intrinsic::kLane:
    case Intrinsic::kDotS8S8:
    case Intrinsic::kTransposeByteRows:
    case Intrinsic::kDotS8S8Halves:
    case Intrinsic::kStreamBase:
    case Intrinsic::kShuffle:
    case Intrinsic::kMaximum:
    case Intrinsic::kMinimum:
    case Intrinsic::kBitCast:
      break;
  }
  throw std::runtime_error("codegen: unknown intrinsic");
}

void CodeGenLLVM::EmitStmt(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
    case StmtKind::kSeq:
      for (auto& x : static_cast<const lower::SeqNode*>(s.get())->stmts) EmitStmt(x);
      break;
    case StmtKind::kStore: {
      auto* st = static_cast<const lower::StoreNode*>(s.get());
      llvm::Value* v = Emit(st->value);
      const BufferNode* buf = st->buffer.get();
      llvm::Type* sty = ElementType(buf);
      if (st->value.dtype().lanes != buf->dtype.lanes) {
        // A vector into consecutive scalar elements; only element alignment is known.
        if (buf->dtype.lanes != 1 || st->value.dtype().code != buf->dtype.code ||
            st->value.dtype().bits != buf->dtype.bits) {
          throw std::runtime_error("codegen: cannot store " + te::DataTypeName(st->value.dtype()) +
                                   " into " + buf->name + " of type " +
                                   te::DataTypeName(buf->dtype) + " in " + func_name_);
        }
        if (buf->scope != BufferScope::kLocal && te::IsFloat(buf->dtype) && buf->dtype.bits == 16) {
          v = b_.CreateFPTrunc(v, StorageType(st->value.dtype()));
        }
        if (te::IsBool(buf->dtype)) {  // a byte per element, as scalar stores write them
          v = b_.CreateZExt(v, llvm::FixedVectorType::get(i8_, st->value.dtype().lanes));
        }
        TagAccess(b_.CreateAlignedStore(v, ElementPtr(buf, st->index, false),
                                        llvm::Align(te::StorageBytes(buf->dtype))),
                  buf);
        break;
      }
      if (v->getType() != sty) {
        if (v->getType()->isIntegerTy() && sty->isIntegerTy()) {
          v = b_.CreateIntCast(v, sty, !te::IsBool(buf->dtype) && te::IsInt(st->value.dtype()));
        } else if (v->getType()->isFloatingPointTy() && sty->isFloatingPointTy()) {
          v = b_.CreateFPCast(v, sty);
        }
      }
      TagAccess(b_.CreateStore(v, ElementPtr(buf, st->index, false)), buf);
      break;
    }
    case StmtKind::kPrefetch: {
      auto* p = static_cast<const lower::PrefetchNode*>(s.get());
      // A prefetch is a hint that never faults (x86 PREFETCHh, AArch64 PRFM, ARMv7 PLD), so its
      // address is plain arithmetic, neither clamped nor an in-bounds GEP: clamping it cost a
      // dozen scalar instructions per prefetch inside the conv tiles' FMA loops.
      llvm::Value* addr = b_.CreateGEP(ElementType(p->buffer.get()), BufferPtr(p->buffer.get()),
                                       EmitIndex(p->index));
      // llvm.prefetch(address, read, locality 2 (keep in the outer caches), data cache)
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {addr->getType()},
                         {addr, b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
      break;
    }
    case StmtKind::kIndexCheck: {
      auto* p = static_cast<const lower::IndexCheckNode*>(s.get());
      EmitIndexCheck(BufferPtr(p->buffer.get()), p->buffer->dtype.bits, p->count, p->extent,
                     p->message, p->first, p->step, p->non_negative);
      break;
    }
    case StmtKind::kIf: {
      auto* p = static_cast<const lower::IfNode*>(s.get());
      llvm::Value* c = Emit(p->cond);
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", func_);
      auto* else_bb = llvm::BasicBlock::Create(ctx_, "else", func_);
      auto* end_bb = llvm::BasicBlock::Create(ctx_, "endif", func_);
      b_.CreateCondBr(c, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      EmitStmt(p->then_case);
      b_.CreateBr(end_bb);
      b_.SetInsertPoint(else_bb);
      EmitStmt(p->else_case);
      b_.CreateBr(end_bb);
      b_.SetInsertPoint(end_bb);
      break;
    }
    case StmtKind::kFor:
      EmitFor(static_cast<const lower::ForNode*>(s.get()));
      break;
  }
}

void CodeGenLLVM::EmitFor(const lower::ForNode* f) {
  if (f->extent <= 0) return;
  if (f->for_kind == ForKind::kParallel) {
    EmitParallelFor(f);
    return;
  }
  llvm::Value* begin = llvm::ConstantInt::get(index_ty_, 0);
  // A register-blocked loop of two trips takes its back edge once, so LLVM folds the induction
  // variable there to the constant of the second trip; it is then no recurrence to strength-
  // reduce, and every load and store of the body computes its address apart (AArch64: register
  // offsets, no paired loads). A start LLVM cannot see keeps the recurrence.
  if (f->keep_scalar && f->extent == 2) begin = EmitStreamBase(begin);
  llvm::Value* end = llvm::ConstantInt::get(index_ty_, f->extent);
  if (f->limit.defined()) {
    end = b_.CreateIntrinsic(llvm::Intrinsic::smin, {index_ty_},
                             {end, CastInt(Emit(f->limit), index_ty_, true)});
  }
  EmitLoop(f->var, begin, end,
           f->for_kind == ForKind::kVectorized ? std::max(1, f->vector_lanes)
                                               : (f->keep_scalar ? -1 : 0),
           f->body);
}

void CodeGenLLVM::EmitLoop(const Expr& var, llvm::Value* begin, llvm::Value* end, int vectorize,
                           const Stmt& body) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "loop", func_);
  auto* exit = llvm::BasicBlock::Create(ctx_, "loop_exit", func_);
  b_.CreateCondBr(b_.CreateICmpSLT(begin, end), loop, exit);
  b_.SetInsertPoint(loop);
  llvm::PHINode* iv = b_.CreatePHI(index_ty_, 2, te::ToString(var));
  iv->addIncoming(begin, pre);
  vars_[var.get()] = iv;
  EmitStmt(body);
  llvm::Value* next = b_.CreateAdd(iv, llvm::ConstantInt::get(index_ty_, 1), "", true, true);
  iv->addIncoming(next, b_.GetInsertBlock());
  auto* br = b_.CreateCondBr(b_.CreateICmpSLT(next, end), loop, exit);
  if (vectorize < 0) {
    // A register-blocked body (compiler/schedule/): no loop vectorisation along this loop.
    auto* node = llvm::MDNode::getDistinct(
        ctx_, {nullptr,
               llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
                                        llvm::ConstantAsMetadata::get(b_.getInt32(1))}),
               llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.interleave.count"),
                                        llvm::ConstantAsMetadata::get(b_.getInt32(1))}),
               llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")})});
    node->replaceOperandWith(0, node);
    br->setMetadata(llvm::LLVMContext::MD_loop, node);
  }
  if (vectorize > 0) {
    llvm::SmallVector<llvm::Metadata*, 3> md;
    md.push_back(nullptr);
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.enable"),
                                          llvm::ConstantAsMetadata::get(b_.getTrue())}));
    md.push_back(llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.mustprogress")}));
    if (vectorize > 1) {
      // An exact vector width (ForNode::vector_lanes): no full unrolling before vectorisation.
      md.push_back(
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.vectorize.width"),
                                   llvm::ConstantAsMetadata::get(b_.getInt32(vectorize))}));
      md.push_back(
          llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.disable")}));
    }
    auto* node = llvm::MDNode::getDistinct(ctx_, md);
    node->replaceOperandWith(0, node);
    br->setMetadata(llvm::LLVMContext::MD_loop, node);
  }
  vars_.erase(var.get());
  b_.SetInsertPoint(exit);
}

}  // namespace ember::compiler::codegen
