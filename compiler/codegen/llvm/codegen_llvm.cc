#include "codegen_llvm.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

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

namespace {

// TVM type codes for tensor arguments (c_runtime_api.h).
constexpr int kDLTensorHandleCode = 7;
constexpr int kNDArrayHandleCode = 13;
constexpr int kDLCPUDevice = 1;
// Field numbers of DLTensor (dlpack 0.6): data, device, ndim, dtype, shape, strides, byte_offset.
constexpr unsigned kFieldData = 0, kFieldNdim = 2, kFieldDtype = 3, kFieldShape = 4,
                   kFieldStrides = 5, kFieldByteOffset = 6;

}  // namespace

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
  llvm::FastMathFlags fmf;
  fmf.setAllowReassoc();
  fmf.setAllowContract();
  b_.setFastMathFlags(fmf);
}

llvm::Type* CodeGenLLVM::ValueType(DataType t) {
  if (t.lanes > 1) {
    return llvm::FixedVectorType::get(ValueType(te::WithLanes(t, 1)), t.lanes);
  }
  if (te::IsBool(t)) return llvm::Type::getInt1Ty(ctx_);
  if (t.code == kDLFloat) {
    if (t.bits == 16) return llvm::Type::getHalfTy(ctx_);
    if (t.bits == 32) return llvm::Type::getFloatTy(ctx_);
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
  bool saved = index_mode_;
  index_mode_ = false;
  llvm::Type* ty = ValueType(t);
  index_mode_ = saved;
  return ty;
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

llvm::GlobalVariable* CodeGenLLVM::ModuleCtx() {
  if (module_ctx_) return module_ctx_;
  llvm::Constant* init = define_module_ctx_ ? llvm::ConstantPointerNull::get(ptr_) : nullptr;
  module_ctx_ = new llvm::GlobalVariable(*module_, ptr_, false, llvm::GlobalValue::ExternalLinkage,
                                         init, "__tvm_module_ctx");
  module_ctx_->setVisibility(llvm::GlobalValue::DefaultVisibility);
  return module_ctx_;
}

// void __ember_set_error(const char* prefix, i64 got): writes prefix followed by the decimal
// value into a stack buffer and calls TVMAPISetLastError. Generated code may only depend on the
// TVM backend API and libm, so no snprintf.
llvm::Function* CodeGenLLVM::ErrorHelper() {
  if (error_helper_) return error_helper_;
  auto saved_ip = b_.saveIP();
  auto* fty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, i64_}, false);
  auto* f =
      llvm::Function::Create(fty, llvm::GlobalValue::InternalLinkage, "__ember_set_error", module_);
  f->addFnAttr(llvm::Attribute::NoInline);
  f->addFnAttr(llvm::Attribute::Cold);
  f->addFnAttr(llvm::Attribute::NoUnwind);
  auto* set_err =
      GetExtern("TVMAPISetLastError", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
  constexpr int kMaxPrefix = 480;
  constexpr int kBufSize = 512;
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", f);
  auto* copy = llvm::BasicBlock::Create(ctx_, "copy", f);
  auto* copied = llvm::BasicBlock::Create(ctx_, "copied", f);
  auto* digits = llvm::BasicBlock::Create(ctx_, "digits", f);
  auto* rev = llvm::BasicBlock::Create(ctx_, "rev", f);
  auto* done = llvm::BasicBlock::Create(ctx_, "done", f);
  llvm::Value* prefix = f->getArg(0);
  llvm::Value* got = f->getArg(1);
  b_.SetInsertPoint(entry);
  auto* buf = b_.CreateAlloca(llvm::ArrayType::get(i8_, kBufSize));
  auto* tmp = b_.CreateAlloca(llvm::ArrayType::get(i8_, 24));
  b_.CreateBr(copy);
  // copy prefix (bounded)
  b_.SetInsertPoint(copy);
  auto* i = b_.CreatePHI(i64_, 2);
  i->addIncoming(b_.getInt64(0), entry);
  auto* c = b_.CreateLoad(i8_, b_.CreateGEP(i8_, prefix, i));
  b_.CreateStore(c, b_.CreateGEP(i8_, buf, i));
  auto* inext = b_.CreateAdd(i, b_.getInt64(1));
  i->addIncoming(inext, copy);
  auto* more = b_.CreateAnd(b_.CreateICmpNE(c, b_.getInt8(0)),
                            b_.CreateICmpSLT(inext, b_.getInt64(kMaxPrefix)));
  b_.CreateCondBr(more, copy, copied);
  // position of the terminating NUL (or kMaxPrefix)
  b_.SetInsertPoint(copied);
  auto* pos0 = b_.CreateSelect(b_.CreateICmpEQ(c, b_.getInt8(0)), i, inext);
  auto* neg = b_.CreateICmpSLT(got, b_.getInt64(0));
  // magnitude as unsigned (handles INT64_MIN)
  auto* mag = b_.CreateSelect(neg, b_.CreateSub(b_.getInt64(0), got), got);
  b_.CreateStore(b_.getInt8('-'), b_.CreateGEP(i8_, buf, pos0));
  auto* pos = b_.CreateSelect(neg, b_.CreateAdd(pos0, b_.getInt64(1)), pos0);
  b_.CreateBr(digits);
  // digits into tmp, least significant first
  b_.SetInsertPoint(digits);
  auto* n = b_.CreatePHI(i64_, 2);
  auto* k = b_.CreatePHI(i64_, 2);
  n->addIncoming(mag, copied);
  k->addIncoming(b_.getInt64(0), copied);
  auto* d = b_.CreateURem(n, b_.getInt64(10));
  b_.CreateStore(b_.CreateTrunc(b_.CreateAdd(d, b_.getInt64('0')), i8_), b_.CreateGEP(i8_, tmp, k));
  auto* nn = b_.CreateUDiv(n, b_.getInt64(10));
  auto* kn = b_.CreateAdd(k, b_.getInt64(1));
  n->addIncoming(nn, digits);
  k->addIncoming(kn, digits);
  b_.CreateCondBr(b_.CreateICmpNE(nn, b_.getInt64(0)), digits, rev);
  // reverse into buf
  b_.SetInsertPoint(rev);
  auto* j = b_.CreatePHI(i64_, 2);
  j->addIncoming(b_.getInt64(0), digits);
  auto* src = b_.CreateSub(b_.CreateSub(kn, j), b_.getInt64(1));
  auto* ch = b_.CreateLoad(i8_, b_.CreateGEP(i8_, tmp, src));
  b_.CreateStore(ch, b_.CreateGEP(i8_, buf, b_.CreateAdd(pos, j)));
  auto* jn = b_.CreateAdd(j, b_.getInt64(1));
  j->addIncoming(jn, rev);
  b_.CreateCondBr(b_.CreateICmpULT(jn, kn), rev, done);
  b_.SetInsertPoint(done);
  b_.CreateStore(b_.getInt8(0), b_.CreateGEP(i8_, buf, b_.CreateAdd(pos, kn)));
  b_.CreateCall(set_err, {buf});
  b_.CreateRetVoid();
  b_.restoreIP(saved_ip);
  error_helper_ = f;
  return f;
}

void CodeGenLLVM::Check(llvm::Value* ok, const std::string& prefix, llvm::Value* got) {
  auto* fail = llvm::BasicBlock::Create(ctx_, "arg_fail", func_);
  auto* cont = llvm::BasicBlock::Create(ctx_, "arg_ok", func_);
  llvm::MDBuilder md(ctx_);
  b_.CreateCondBr(ok, cont, fail, md.createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail);
  b_.CreateCall(ErrorHelper(), {Str(prefix), b_.CreateSExt(got, i64_)});
  b_.CreateRet(b_.getInt32(-1));
  b_.SetInsertPoint(cont);
}

void CodeGenLLVM::EmitIndexCheck(const lower::LoweredFunc& f, const lower::IndexCheck& check) {
  const lower::ArgInfo& a = f.args.at(static_cast<size_t>(check.arg));
  int64_t count = 1;
  for (int64_t d : a.shape) count *= d;
  if (count == 0) return;
  llvm::Type* elem_ty = llvm::IntegerType::get(ctx_, a.dtype.bits);
  llvm::Value* data = buffers_.at(a.buffer.get());
  auto* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "index_check", func_);
  auto* done = llvm::BasicBlock::Create(ctx_, "index_check_done", func_);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto* i = b_.CreatePHI(i64_, 2);
  i->addIncoming(b_.getInt64(0), pre);
  llvm::Value* v = b_.CreateSExt(b_.CreateLoad(elem_ty, b_.CreateGEP(elem_ty, data, i)), i64_);
  Check(b_.CreateAnd(b_.CreateICmpSGE(v, b_.getInt64(-check.extent)),
                     b_.CreateICmpSLT(v, b_.getInt64(check.extent))),
        check.message, v);
  auto* next = b_.CreateAdd(i, b_.getInt64(1));
  i->addIncoming(next, b_.GetInsertBlock());
  b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(count)), loop, done);
  b_.SetInsertPoint(done);
}

llvm::FunctionType* CodeGenLLVM::PackedFuncType() {
  return llvm::FunctionType::get(i32_, {ptr_, ptr_, i32_, ptr_, ptr_, ptr_}, false);
}

llvm::Function* CodeGenLLVM::AddFunction(const lower::LoweredFunc& f) {
  ModuleCtx();
  llvm::FunctionType* fty = PackedFuncType();
  func_ = llvm::Function::Create(fty, llvm::GlobalValue::ExternalLinkage, f.name, module_);
  if (f.prefer_vector_bits > 0) {
    func_->addFnAttr("prefer-vector-width", std::to_string(f.prefer_vector_bits));
  }
  func_->setVisibility(llvm::GlobalValue::DefaultVisibility);
  func_->setDSOLocal(false);
  // Generated code never throws; without this ARM objects reference the EHABI personality.
  func_->addFnAttr(llvm::Attribute::NoUnwind);
  func_name_ = f.name;
  vars_.clear();
  buffers_.clear();
  closure_count_ = 0;
  for (unsigned i = 0; i < 6; ++i) func_->addParamAttr(i, llvm::Attribute::NoUndef);
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", func_);
  b_.SetInsertPoint(entry);
  llvm::Value* args = func_->getArg(0);
  llvm::Value* codes = func_->getArg(1);
  llvm::Value* num_args = func_->getArg(2);
  const std::string fn = f.name + ": ";
  int n = static_cast<int>(f.args.size());
  Check(b_.CreateICmpEQ(num_args, b_.getInt32(n)),
        fn + "expected " + std::to_string(n) + " arguments, got ", num_args);
  for (int i = 0; i < n; ++i) {
    const lower::ArgInfo& a = f.args[i];
    std::string what = fn + "argument " + std::to_string(i) + " ('" + a.name + "') ";
    llvm::Value* code = b_.CreateLoad(i32_, b_.CreateConstGEP1_32(i32_, codes, i));
    Check(b_.CreateOr(b_.CreateICmpEQ(code, b_.getInt32(kDLTensorHandleCode)),
                      b_.CreateICmpEQ(code, b_.getInt32(kNDArrayHandleCode))),
          what + "expected a tensor (type code 7 or 13), got type code ", code);
    // TVMValue is an 8-byte union; the handle is its first member.
    llvm::Value* t = b_.CreateLoad(ptr_, b_.CreateConstGEP1_32(i64_, args, i));
    Check(b_.CreateICmpNE(t, llvm::ConstantPointerNull::get(ptr_)),
          what + "is a null tensor: ", b_.getInt64(0));
    llvm::Value* ndim = b_.CreateLoad(i32_, b_.CreateStructGEP(dltensor_ty_, t, kFieldNdim));
    int rank = static_cast<int>(a.shape.size());
    Check(b_.CreateICmpEQ(ndim, b_.getInt32(rank)),
          what + "expected ndim " + std::to_string(rank) + ", got ", ndim);
    llvm::Value* dt = b_.CreateStructGEP(dltensor_ty_, t, kFieldDtype);
    auto* dtype_ty = llvm::cast<llvm::StructType>(dltensor_ty_->getElementType(kFieldDtype));
    llvm::Value* dcode = b_.CreateLoad(i8_, b_.CreateStructGEP(dtype_ty, dt, 0));
    llvm::Value* dbits = b_.CreateLoad(i8_, b_.CreateStructGEP(dtype_ty, dt, 1));
    llvm::Value* dlanes = b_.CreateLoad(b_.getInt16Ty(), b_.CreateStructGEP(dtype_ty, dt, 2));
    std::string dname = te::DataTypeName(a.dtype);
    if (te::IsBool(a.dtype)) {
      // bool may arrive as {uint,1}, {uint,8} or {bool(6),8}: accept any one-byte spelling.
      llvm::Value* ok =
          b_.CreateOr(b_.CreateAnd(b_.CreateICmpEQ(dcode, b_.getInt8(kDLUInt)),
                                   b_.CreateOr(b_.CreateICmpEQ(dbits, b_.getInt8(1)),
                                               b_.CreateICmpEQ(dbits, b_.getInt8(8)))),
                      b_.CreateAnd(b_.CreateICmpEQ(dcode, b_.getInt8(6)),
                                   b_.CreateICmpEQ(dbits, b_.getInt8(8))));
      Check(ok, what + "expected dtype bool, got type code ", b_.CreateZExt(dcode, i32_));
    } else {
      Check(b_.CreateICmpEQ(dcode, b_.getInt8(a.dtype.code)),
            what + "expected dtype " + dname + " (type code " + std::to_string(a.dtype.code) +
                "), got type code ",
            b_.CreateZExt(dcode, i32_));
      Check(b_.CreateICmpEQ(dbits, b_.getInt8(a.dtype.bits)),
            what + "expected dtype " + dname + " (" + std::to_string(a.dtype.bits) +
                " bits), got bits ",
            b_.CreateZExt(dbits, i32_));
    }
    Check(b_.CreateICmpEQ(dlanes, b_.getInt16(1)), what + "expected 1 lane, got ",
          b_.CreateZExt(dlanes, i32_));
    if (rank > 0) {
      llvm::Value* shape = b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_ty_, t, kFieldShape));
      for (int d = 0; d < rank; ++d) {
        llvm::Value* dim = b_.CreateLoad(i64_, b_.CreateConstGEP1_32(i64_, shape, d));
        Check(b_.CreateICmpEQ(dim, b_.getInt64(a.shape[d])),
              what + "expected shape[" + std::to_string(d) + "] == " + std::to_string(a.shape[d]) +
                  ", got ",
              dim);
      }
      llvm::Value* strides =
          b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_ty_, t, kFieldStrides));
      auto* has_strides = llvm::BasicBlock::Create(ctx_, "strides", func_);
      auto* strides_done = llvm::BasicBlock::Create(ctx_, "strides_done", func_);
      b_.CreateCondBr(b_.CreateICmpEQ(strides, llvm::ConstantPointerNull::get(ptr_)), strides_done,
                      has_strides);
      b_.SetInsertPoint(has_strides);
      int64_t expect = 1;
      for (int d = rank - 1; d >= 0; --d) {
        if (a.shape[d] != 1) {
          llvm::Value* s = b_.CreateLoad(i64_, b_.CreateConstGEP1_32(i64_, strides, d));
          Check(b_.CreateICmpEQ(s, b_.getInt64(expect)),
                what + "must be compact: expected strides[" + std::to_string(d) +
                    "] == " + std::to_string(expect) + ", got ",
                s);
        }
        expect *= a.shape[d];
      }
      b_.CreateBr(strides_done);
      b_.SetInsertPoint(strides_done);
    }
    llvm::Value* data = b_.CreateLoad(ptr_, b_.CreateStructGEP(dltensor_ty_, t, kFieldData));
    llvm::Value* off = b_.CreateLoad(i64_, b_.CreateStructGEP(dltensor_ty_, t, kFieldByteOffset));
    if (index_ty_ != i64_) off = b_.CreateTrunc(off, index_ty_);
    data = b_.CreateGEP(i8_, data, off, a.name + "_data");
    buffers_[a.buffer.get()] = data;
  }
  for (const lower::IndexCheck& check : f.index_checks) EmitIndexCheck(f, check);
  // Workspaces, freed on every exit through the cleanup block.
  status_ = b_.CreateAlloca(i32_, nullptr, "status");
  b_.CreateStore(b_.getInt32(0), status_);
  auto* alloc_ws = GetExtern("TVMBackendAllocWorkspace",
                             llvm::FunctionType::get(ptr_, {i32_, i32_, i64_, i32_, i32_}, false));
  auto* free_ws = GetExtern("TVMBackendFreeWorkspace",
                            llvm::FunctionType::get(i32_, {i32_, i32_, ptr_}, false));
  cleanup_bb_ = llvm::BasicBlock::Create(ctx_, "cleanup", func_);
  std::vector<llvm::Value*> ws_slots;
  for (auto& w : f.workspaces) {
    auto* slot = b_.CreateAlloca(ptr_, nullptr, w->name + "_slot");
    b_.CreateStore(llvm::ConstantPointerNull::get(ptr_), slot);
    ws_slots.push_back(slot);
  }
  for (size_t k = 0; k < f.workspaces.size(); ++k) {
    const auto& w = f.workspaces[k];
    int64_t bytes = w->size * te::StorageBytes(w->dtype);
    llvm::Value* p =
        b_.CreateCall(alloc_ws, {b_.getInt32(kDLCPUDevice), b_.getInt32(0), b_.getInt64(bytes),
                                 b_.getInt32(w->dtype.code), b_.getInt32(w->dtype.bits)});
    b_.CreateStore(p, ws_slots[k]);
    auto* fail = llvm::BasicBlock::Create(ctx_, "ws_fail", func_);
    auto* ok = llvm::BasicBlock::Create(ctx_, "ws_ok", func_);
    b_.CreateCondBr(b_.CreateICmpEQ(p, llvm::ConstantPointerNull::get(ptr_)), fail, ok);
    b_.SetInsertPoint(fail);
    b_.CreateCall(ErrorHelper(), {Str(fn + "could not allocate workspace " + w->name + ", bytes: "),
                                  b_.getInt64(bytes)});
    b_.CreateStore(b_.getInt32(-1), status_);
    b_.CreateBr(cleanup_bb_);
    b_.SetInsertPoint(ok);
    buffers_[w.get()] = p;
  }
  EmitStmt(f.body);
  b_.CreateBr(cleanup_bb_);
  b_.SetInsertPoint(cleanup_bb_);
  for (int k = static_cast<int>(f.workspaces.size()) - 1; k >= 0; --k) {
    llvm::Value* p = b_.CreateLoad(ptr_, ws_slots[k]);
    auto* do_free = llvm::BasicBlock::Create(ctx_, "free", func_);
    auto* next = llvm::BasicBlock::Create(ctx_, "freed", func_);
    b_.CreateCondBr(b_.CreateICmpNE(p, llvm::ConstantPointerNull::get(ptr_)), do_free, next);
    b_.SetInsertPoint(do_free);
    b_.CreateCall(free_ws, {b_.getInt32(kDLCPUDevice), b_.getInt32(0), p});
    b_.CreateBr(next);
    b_.SetInsertPoint(next);
  }
  b_.CreateRet(b_.CreateLoad(i32_, status_));
  llvm::Function* result = func_;
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyFunction(*result, &os)) {
    throw std::runtime_error("codegen: invalid LLVM IR for " + f.name + ": " + os.str());
  }
  func_ = nullptr;
  return result;
}

llvm::Value* CodeGenLLVM::BufferPtr(const BufferNode* b) {
  auto it = buffers_.find(b);
  if (it != buffers_.end()) return it->second;
  if (b->scope != BufferScope::kLocal) {
    throw std::runtime_error("codegen: buffer " + b->name + " used outside its scope");
  }
  // Locals live in the entry block of the function being emitted (closures get their own).
  llvm::IRBuilder<> eb(&func_->getEntryBlock(), func_->getEntryBlock().begin());
  llvm::Value* p = eb.CreateAlloca(
      StorageType(b->dtype),
      b->size > 1 ? llvm::ConstantInt::get(i32_, static_cast<uint64_t>(b->size)) : nullptr,
      b->name);
  if (b->size > 1) llvm::cast<llvm::AllocaInst>(p)->setAlignment(llvm::Align(64));
  buffers_[b] = p;
  return p;
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
  return b_.CreateInBoundsGEP(StorageType(b->dtype), base, idx);
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
  if (v->getType() == tt && te::IsFloat(to) == te::IsFloat(from)) return v;
  if (te::IsBool(to)) {
    if (te::IsFloat(from)) return b_.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b_.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (te::IsFloat(to)) {
    if (te::IsFloat(from)) return b_.CreateFPCast(v, tt);
    if (te::IsInt(from)) return b_.CreateSIToFP(v, tt);
    return b_.CreateUIToFP(v, tt);
  }
  // integer target
  if (te::IsFloat(from)) {
    return te::IsInt(to) ? b_.CreateFPToSI(v, tt) : b_.CreateFPToUI(v, tt);
  }
  return CastInt(v, tt, te::IsInt(from));
}

llvm::Value* CodeGenLLVM::Emit(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::kIntImm: {
      llvm::Type* t = ValueType(e.dtype());
      return llvm::ConstantInt::get(t, static_cast<uint64_t>(e.as<te::IntImmNode>()->value), true);
    }
    case ExprKind::kFloatImm:
      return llvm::ConstantFP::get(ValueType(e.dtype()), e.as<te::FloatImmNode>()->value);
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
      return EmitCast(e.dtype(), c->value.dtype(), Emit(c->value));
    }
    case ExprKind::kCall:
      return EmitCall(e.as<te::CallNode>());
    case ExprKind::kBufferLoad: {
      auto* l = e.as<lower::BufferLoadNode>();
      const BufferNode* buf = l->buffer.get();
      if (e.dtype().lanes != buf->dtype.lanes) return EmitVectorLoad(l);
      llvm::Value* p = ElementPtr(buf, l->index, clamp_depth_ > 0);
      llvm::Type* st = StorageType(buf->dtype);
      llvm::Value* v = b_.CreateLoad(st, p);
      if (te::IsBool(buf->dtype)) return b_.CreateICmpNE(v, llvm::ConstantInt::get(st, 0));
      llvm::Type* want = ValueType(buf->dtype);
      if (want != st) v = CastInt(v, want, te::IsInt(buf->dtype));
      return v;
    }
    case ExprKind::kTensorLoad:
    case ExprKind::kReduce:
      throw std::runtime_error("codegen: te node reached codegen unlowered in " + func_name_);
  }
  return nullptr;
}

llvm::Value* CodeGenLLVM::EmitVectorLoad(const lower::BufferLoadNode* l) {
  const BufferNode* buf = l->buffer.get();
  const int lanes = l->dtype.lanes;
  if (buf->dtype.lanes != 1 || te::IsBool(buf->dtype)) {
    throw std::runtime_error("codegen: vector load from " + buf->name + " of type " +
                             te::DataTypeName(buf->dtype) + " in " + func_name_);
  }
  llvm::Value* p = ElementPtr(buf, l->index, clamp_depth_ > 0, lanes);
  // Only element alignment is known: the vector's own alignment would allow aligned moves.
  return b_.CreateAlignedLoad(ValueType(l->dtype), p, llvm::Align(te::StorageBytes(buf->dtype)));
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
      return is_signed ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
    case BinaryOp::kMod:
      if (is_float) return b_.CreateFRem(a, b);
      return is_signed ? b_.CreateSRem(a, b) : b_.CreateURem(a, b);
    case BinaryOp::kFloorDiv:
    case BinaryOp::kFloorMod: {
      if (is_float) {
        llvm::Value* q = b_.CreateUnaryIntrinsic(llvm::Intrinsic::floor, b_.CreateFDiv(a, b));
        if (bn->op == BinaryOp::kFloorDiv) return q;
        return b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      if (!is_signed)
        return bn->op == BinaryOp::kFloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
      llvm::Value* q = b_.CreateSDiv(a, b);
      llvm::Value* r = b_.CreateSRem(a, b);
      llvm::Value* zero = llvm::ConstantInt::get(a->getType(), 0);
      llvm::Value* adjust =
          b_.CreateAnd(b_.CreateICmpNE(r, zero),
                       b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(b, zero)));
      if (bn->op == BinaryOp::kFloorDiv) {
        return b_.CreateSelect(adjust, b_.CreateSub(q, llvm::ConstantInt::get(a->getType(), 1)), q);
      }
      return b_.CreateSelect(adjust, b_.CreateAdd(r, b), r);
    }
    case BinaryOp::kMin:
    case BinaryOp::kMax: {
      bool mx = bn->op == BinaryOp::kMax;
      if (is_float) {
        // NaN in `a` propagates (numpy-like) and the compare+select pattern vectorises.
        llvm::Value* c = mx ? b_.CreateFCmpUGT(a, b) : b_.CreateFCmpULT(a, b);
        return b_.CreateSelect(c, a, b);
      }
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
    case BinaryOp::kAnd:
      return b_.CreateAnd(a, b);
    case BinaryOp::kOr:
      return b_.CreateOr(a, b);
    case BinaryOp::kXor:
      return b_.CreateXor(a, b);
  }
  return nullptr;
}

llvm::Value* CodeGenLLVM::EmitCall(const te::CallNode* c) {
  using te::Intrinsic;
  DataType t = c->args[0].dtype();
  std::vector<llvm::Value*> args;
  for (auto& a : c->args) args.push_back(Emit(a));
  llvm::Value* x = args[0];
  llvm::Type* ty = x->getType();
  bool is_float = te::IsFloat(t);
  auto unary = [&](llvm::Intrinsic::ID id) { return b_.CreateUnaryIntrinsic(id, x); };
  auto libm = [&](const char* name) -> llvm::Value* {
    // float16 goes through float; float64 uses the double variant.
    bool dbl = ty->isDoubleTy();
    llvm::Type* ct = dbl ? ty : b_.getFloatTy();
    std::string n = dbl ? name : std::string(name) + "f";
    std::vector<llvm::Type*> ptys(args.size(), ct);
    auto* fn = GetExtern(n, llvm::FunctionType::get(ct, ptys, false));
    fn->setDoesNotThrow();
    fn->setDoesNotAccessMemory();
    std::vector<llvm::Value*> cargs;
    for (auto* a : args) cargs.push_back(a->getType() == ct ? a : b_.CreateFPCast(a, ct));
    llvm::Value* r = b_.CreateCall(fn, cargs);
    return r->getType() == ty ? r : b_.CreateFPCast(r, ty);
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
      return unary(llvm::Intrinsic::exp);
    case Intrinsic::kLog:
      return unary(llvm::Intrinsic::log);
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
      return libm("tanh");
    case Intrinsic::kErf:
      return libm("erf");
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
      llvm::Value* e = b_.CreateUnaryIntrinsic(llvm::Intrinsic::exp, b_.CreateFNeg(x));
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
      llvm::Type* sty = StorageType(buf->dtype);
      if (st->value.dtype().lanes != buf->dtype.lanes) {
        // A vector into consecutive scalar elements; only element alignment is known.
        if (buf->dtype.lanes != 1 || st->value.dtype().code != buf->dtype.code ||
            st->value.dtype().bits != buf->dtype.bits) {
          throw std::runtime_error("codegen: cannot store " + te::DataTypeName(st->value.dtype()) +
                                   " into " + buf->name + " of type " +
                                   te::DataTypeName(buf->dtype) + " in " + func_name_);
        }
        b_.CreateAlignedStore(v, ElementPtr(buf, st->index, false),
                              llvm::Align(te::StorageBytes(buf->dtype)));
        break;
      }
      if (v->getType() != sty) {
        if (v->getType()->isIntegerTy() && sty->isIntegerTy()) {
          v = b_.CreateIntCast(v, sty, !te::IsBool(buf->dtype) && te::IsInt(st->value.dtype()));
        } else if (v->getType()->isFloatingPointTy() && sty->isFloatingPointTy()) {
          v = b_.CreateFPCast(v, sty);
        }
      }
      b_.CreateStore(v, ElementPtr(buf, st->index, false));
      break;
    }
    case StmtKind::kPrefetch: {
      auto* p = static_cast<const lower::PrefetchNode*>(s.get());
      llvm::Value* addr = ElementPtr(p->buffer.get(), p->index, true);
      // llvm.prefetch(address, read, locality 2 (keep in the outer caches), data cache)
      b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {addr->getType()},
                         {addr, b_.getInt32(0), b_.getInt32(2), b_.getInt32(1)});
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
  EmitLoop(f->var, llvm::ConstantInt::get(index_ty_, 0),
           llvm::ConstantInt::get(index_ty_, f->extent),
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

namespace {

// Variables and buffers a statement reads but does not bind itself.
struct FreeCollector {
  std::set<const te::ExprNode*> bound;
  std::vector<const te::ExprNode*> vars;
  std::set<const te::ExprNode*> var_seen;
  std::vector<const BufferNode*> buffers;
  std::set<const BufferNode*> buf_seen;

  void Buf(const BufferNode* b) {
    if (b->scope == BufferScope::kLocal) return;
    if (buf_seen.insert(b).second) buffers.push_back(b);
  }
  void E(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
      case ExprKind::kVar:
        if (!bound.count(e.get()) && var_seen.insert(e.get()).second) vars.push_back(e.get());
        break;
      case ExprKind::kBinary:
        E(e.as<te::BinaryNode>()->a);
        E(e.as<te::BinaryNode>()->b);
        break;
      case ExprKind::kNot:
        E(e.as<te::NotNode>()->a);
        break;
      case ExprKind::kSelect: {
        auto* s = e.as<te::SelectNode>();
        E(s->cond);
        E(s->true_value);
        E(s->false_value);
        break;
      }
      case ExprKind::kCast:
        E(e.as<te::CastNode>()->value);
        break;
      case ExprKind::kCall:
        for (auto& a : e.as<te::CallNode>()->args) E(a);
        break;
      case ExprKind::kBufferLoad: {
        auto* l = e.as<lower::BufferLoadNode>();
        Buf(l->buffer.get());
        E(l->index);
        break;
      }
      default:
        break;
    }
  }
  void S(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
      case StmtKind::kFor: {
        auto* f = static_cast<const lower::ForNode*>(s.get());
        bound.insert(f->var.get());
        S(f->body);
        break;
      }
      case StmtKind::kStore: {
        auto* p = static_cast<const lower::StoreNode*>(s.get());
        Buf(p->buffer.get());
        E(p->index);
        E(p->value);
        break;
      }
      case StmtKind::kPrefetch: {
        auto* p = static_cast<const lower::PrefetchNode*>(s.get());
        Buf(p->buffer.get());
        E(p->index);
        break;
      }
      case StmtKind::kIf: {
        auto* p = static_cast<const lower::IfNode*>(s.get());
        E(p->cond);
        S(p->then_case);
        S(p->else_case);
        break;
      }
      case StmtKind::kSeq:
        for (auto& x : static_cast<const lower::SeqNode*>(s.get())->stmts) S(x);
        break;
    }
  }
};

}  // namespace

// Chunks of a parallel loop per task of the launch (see EmitParallelFor).
constexpr int64_t kParallelChunksPerTask = 4;

void CodeGenLLVM::EmitParallelFor(const lower::ForNode* f) {
  FreeCollector fc;
  fc.bound.insert(f->var.get());
  fc.S(f->body);
  // Closure data: buffer base pointers, free variables (as index-typed integers), then the
  // counter tasks take chunks of the loop from.
  std::vector<llvm::Type*> fields;
  for (size_t i = 0; i < fc.buffers.size(); ++i) fields.push_back(ptr_);
  for (size_t i = 0; i < fc.vars.size(); ++i) fields.push_back(index_ty_);
  const unsigned counter_field = static_cast<unsigned>(fields.size());
  fields.push_back(i32_);
  auto* cdata_ty = llvm::StructType::get(ctx_, fields);
  llvm::Value* cdata;
  {
    llvm::IRBuilder<> eb(&func_->getEntryBlock(), func_->getEntryBlock().begin());
    cdata = eb.CreateAlloca(cdata_ty, nullptr, "closure_data");
  }
  for (size_t i = 0; i < fc.buffers.size(); ++i) {
    b_.CreateStore(BufferPtr(fc.buffers[i]), b_.CreateStructGEP(cdata_ty, cdata, i));
  }
  for (size_t i = 0; i < fc.vars.size(); ++i) {
    llvm::Value* v = vars_.at(fc.vars[i]);
    b_.CreateStore(CastInt(v, index_ty_, true),
                   b_.CreateStructGEP(cdata_ty, cdata, fc.buffers.size() + i));
  }
  b_.CreateStore(b_.getInt32(0), b_.CreateStructGEP(cdata_ty, cdata, counter_field));
  // The closure: int32 (int32 task_id, TVMParallelGroupEnv* penv, void* cdata).
  auto* cty = llvm::FunctionType::get(i32_, {i32_, ptr_, ptr_}, false);
  auto* closure =
      llvm::Function::Create(cty, llvm::GlobalValue::InternalLinkage,
                             func_name_ + "_compute_" + std::to_string(closure_count_++), module_);
  closure->addFnAttr(llvm::Attribute::NoUnwind);
  if (func_->hasFnAttribute("prefer-vector-width")) {
    closure->addFnAttr(func_->getFnAttribute("prefer-vector-width"));
  }
  auto saved_ip = b_.saveIP();
  llvm::Function* saved_func = func_;
  auto saved_vars = vars_;
  auto saved_buffers = buffers_;
  func_ = closure;
  buffers_.clear();
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", closure);
  b_.SetInsertPoint(entry);
  llvm::Value* cd = closure->getArg(2);
  for (size_t i = 0; i < fc.buffers.size(); ++i) {
    buffers_[fc.buffers[i]] = b_.CreateLoad(ptr_, b_.CreateStructGEP(cdata_ty, cd, i));
  }
  for (size_t i = 0; i < fc.vars.size(); ++i) {
    vars_[fc.vars[i]] =
        b_.CreateLoad(index_ty_, b_.CreateStructGEP(cdata_ty, cd, fc.buffers.size() + i));
  }
  // TVMParallelGroupEnv { void* sync_handle; int32_t num_task; }
  auto* penv_ty = llvm::StructType::get(ctx_, {ptr_, i32_});
  llvm::Value* num_task = b_.CreateLoad(i32_, b_.CreateStructGEP(penv_ty, closure->getArg(1), 1));
  num_task = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smax, num_task, b_.getInt32(1));
  // Tasks take chunks from a shared counter instead of a fixed 1/num_task share each: a thread
  // that runs slow (a little core, a descheduled vCPU, another process) holds up the launch by
  // one chunk at most.
  llvm::Value* nt = CastInt(num_task, index_ty_, true);
  llvm::Value* extent = llvm::ConstantInt::get(index_ty_, f->extent);
  llvm::Value* one = llvm::ConstantInt::get(index_ty_, 1);
  llvm::Value* chunks = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, extent,
      b_.CreateMul(nt, llvm::ConstantInt::get(index_ty_, kParallelChunksPerTask)));
  llvm::Value* chunk = b_.CreateSDiv(b_.CreateAdd(extent, b_.CreateSub(chunks, one)), chunks);
  llvm::Value* counter = b_.CreateStructGEP(cdata_ty, cd, counter_field);
  auto* take = llvm::BasicBlock::Create(ctx_, "take_chunk", closure);
  auto* run = llvm::BasicBlock::Create(ctx_, "run_chunk", closure);
  auto* done = llvm::BasicBlock::Create(ctx_, "chunks_done", closure);
  b_.CreateBr(take);
  b_.SetInsertPoint(take);
  llvm::Value* c = b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, b_.getInt32(1),
                                      llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic);
  c = CastInt(c, index_ty_, true);
  b_.CreateCondBr(b_.CreateICmpSLT(c, chunks), run, done);
  b_.SetInsertPoint(run);
  llvm::Value* begin = b_.CreateMul(c, chunk);
  llvm::Value* end =
      b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, b_.CreateAdd(begin, chunk), extent);
  EmitLoop(f->var, begin, end, 0, f->body);
  b_.CreateBr(take);
  b_.SetInsertPoint(done);
  b_.CreateRet(b_.getInt32(0));
  func_ = saved_func;
  vars_ = saved_vars;
  buffers_ = saved_buffers;
  b_.restoreIP(saved_ip);
  auto* launch = GetExtern("TVMBackendParallelLaunch",
                           llvm::FunctionType::get(i32_, {ptr_, ptr_, i32_}, false));
  llvm::Value* rc = b_.CreateCall(launch, {closure, cdata, b_.getInt32(0)});
  auto* fail = llvm::BasicBlock::Create(ctx_, "launch_fail", func_);
  auto* ok = llvm::BasicBlock::Create(ctx_, "launch_ok", func_);
  b_.CreateCondBr(b_.CreateICmpEQ(rc, b_.getInt32(0)), ok, fail);
  b_.SetInsertPoint(fail);
  b_.CreateStore(b_.getInt32(-1), status_);
  b_.CreateBr(cleanup_bb_);
  b_.SetInsertPoint(ok);
}

void CodeGenLLVM::AddSystemLibRegistration(const std::vector<std::string>& func_names) {
  llvm::FunctionType* fty = PackedFuncType();
  auto* reg = GetExtern("TVMBackendRegisterSystemLibSymbol",
                        llvm::FunctionType::get(i32_, {ptr_, ptr_}, false));
  auto* ctor = llvm::Function::Create(llvm::FunctionType::get(b_.getVoidTy(), false),
                                      llvm::GlobalValue::InternalLinkage,
                                      "__ember_register_system_lib", module_);
  ctor->addFnAttr(llvm::Attribute::NoUnwind);
  auto* entry = llvm::BasicBlock::Create(ctx_, "entry", ctor);
  b_.SetInsertPoint(entry);
  b_.CreateCall(reg, {Str("__tvm_module_ctx"), ModuleCtx()});
  for (const std::string& name : func_names) b_.CreateCall(reg, {Str(name), GetExtern(name, fty)});
  b_.CreateRetVoid();
  llvm::appendToGlobalCtors(*module_, ctor, 65535);
}

}  // namespace ember::compiler::codegen
