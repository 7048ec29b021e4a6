// CodeGenLLVM, parallel loops: the body becomes a closure over its free variables and
// buffers, launched through TVMBackendParallelLaunch; tasks take chunks from a shared counter.
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

// Chunks of a parallel loop per task of the launch (see EmitParallelFor).
constexpr int64_t kParallelChunksPerTask = 4;

void CodeGenLLVM::EmitParallelFor(const lower::ForNode* f) {
  const lower::FreeVars fc = lower::CollectFreeVars(*f);
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

}  // namespace ember::compiler::codegen
