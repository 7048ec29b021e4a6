// CodeGenLLVM, the CPU calling convention: each kernel as a TVM packed function (argument
// unpacking and checks, errors through TVMAPISetLastError), the module context and the
// system-library registration.
#include <llvm/IR/Constants.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Transforms/Utils/ModuleUtils.h>

#include <functional>
#include <set>
#include <stdexcept>

#include "codegen_llvm.h"
namespace ember::compiler::codegen {

namespace {

// TVM type codes for tensor arguments (c_runtime_api.h).
constexpr int kDLTensorHandleCode = 7;
constexpr int kNDArrayHandleCode = 13;
constexpr int kDLCPUDevice = 1;
// Field numbers of DLTensor (dlpack 0.6): data, device, ndim, dtype, shape, strides, byte_offset.
constexpr unsigned kFieldData = 0, kFieldNdim = 2, kFieldDtype = 3, kFieldShape = 4,
                   kFieldStrides = 5, kFieldByteOffset = 6;

}  // namespace

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
  if (status_ != nullptr) {
    // In the body: leave through the cleanup block, which frees the workspaces.
    b_.CreateStore(b_.getInt32(-1), status_);
    b_.CreateBr(cleanup_bb_);
  } else {
    b_.CreateRet(b_.getInt32(-1));
  }
  b_.SetInsertPoint(cont);
}

void CodeGenLLVM::EmitIndexCheck(llvm::Value* data, int bits, int64_t count, int64_t extent,
                                 const std::string& message, int64_t first, int64_t step,
                                 bool non_negative) {
  if (first >= count) return;
  llvm::Type* elem_ty = llvm::IntegerType::get(ctx_, bits);
  auto* pre = b_.GetInsertBlock();
  auto* loop = llvm::BasicBlock::Create(ctx_, "index_check", func_);
  auto* done = llvm::BasicBlock::Create(ctx_, "index_check_done", func_);
  b_.CreateBr(loop);
  b_.SetInsertPoint(loop);
  auto* i = b_.CreatePHI(i64_, 2);
  i->addIncoming(b_.getInt64(first), pre);
  llvm::Value* v = b_.CreateSExt(b_.CreateLoad(elem_ty, b_.CreateGEP(elem_ty, data, i)), i64_);
  Check(b_.CreateAnd(b_.CreateICmpSGE(v, b_.getInt64(non_negative ? 0 : -extent)),
                     b_.CreateICmpSLT(v, b_.getInt64(extent))),
        message, v);
  auto* next = b_.CreateAdd(i, b_.getInt64(step));
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
  b_.setFastMathFlags(f.exact_float ? llvm::FastMathFlags() : FastFloat());
  exact_float_ = f.exact_float;
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
  status_ = nullptr;
  for (const lower::IndexCheck& check : f.index_checks) {
    const lower::ArgInfo& a = f.args.at(static_cast<size_t>(check.arg));
    EmitIndexCheck(buffers_.at(a.buffer.get()), a.dtype.bits, a.buffer->size, check.extent,
                   check.message, check.first, check.step, check.non_negative);
  }
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
  local_views_.clear();
  parallel_counters_.clear();
  for (const auto& [view, target] : f.aliases) {
    if (target->scope == lower::BufferScope::kLocal) {
      local_views_[view.get()] = target.get();
    } else {
      buffers_[view.get()] = BufferPtr(target.get());
    }
  }
  BeginAliasScopes(f);
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
