// CodeGenLLVM, parallel loops: the body becomes a closure over its free variables and
// buffers, launched through TVMBackendParallelLaunch; each task takes the chunks of its own home
// range of the loop first, then what is left of the others.
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
// The loop's chunks are split into this many home ranges at most, one per task (tasks beyond it
// share them); each range has its own claim counter, a cache line apart.
constexpr int64_t kParallelHomeRanges = 32;
constexpr int64_t kCounterStride = 16;  // int32 words: 64 bytes

llvm::Value* CodeGenLLVM::ParallelCounters() {
  llvm::Value*& counters = parallel_counters_[func_];
  if (counters == nullptr) {
    llvm::IRBuilder<> eb(&func_->getEntryBlock(), func_->getEntryBlock().begin());
    auto* alloca = eb.CreateAlloca(llvm::ArrayType::get(i32_, kParallelHomeRanges * kCounterStride),
                                   nullptr, "parallel_counters");
    alloca->setAlignment(llvm::Align(64));
    counters = alloca;
  }
  return counters;
}

void CodeGenLLVM::EmitParallelFor(const lower::ForNode* f) {
  const lower::FreeVars fc = lower::CollectFreeVars(*f);
  // Closure data: buffer base pointers, free variables (as index-typed integers), then the
  // claim counters of the home ranges (zeroed for each launch).
  std::vector<llvm::Type*> fields;
  for (size_t i = 0; i < fc.buffers.size(); ++i) fields.push_back(ptr_);
  for (size_t i = 0; i < fc.vars.size(); ++i) fields.push_back(index_ty_);
  const unsigned counter_field = static_cast<unsigned>(fields.size());
  fields.push_back(ptr_);
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
  llvm::Value* counters = ParallelCounters();
  for (int64_t r = 0; r < kParallelHomeRanges; ++r) {
    b_.CreateStore(b_.getInt32(0),
                   b_.CreateConstInBoundsGEP1_64(i32_, counters, r * kCounterStride));
  }
  b_.CreateStore(counters, b_.CreateStructGEP(cdata_ty, cdata, counter_field));
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
  // Each task runs the chunks of its own home range first, in order, then takes what is left in
  // the others': a thread that runs slow (a little core, a descheduled vCPU, another process)
  // holds up the launch by one chunk at most, and otherwise every launch gives each thread the
  // same part of the loop, so the next kernel finds the rows it reads in its own core's cache
  // (schedules put output rows outermost in their parallel loops) rather than in another's.
  llvm::Value* nt = CastInt(num_task, index_ty_, true);
  llvm::Value* extent = llvm::ConstantInt::get(index_ty_, f->extent);
  llvm::Value* one = llvm::ConstantInt::get(index_ty_, 1);
  llvm::Value* zero = llvm::ConstantInt::get(index_ty_, 0);
  llvm::Value* chunks = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, extent,
      b_.CreateMul(nt, llvm::ConstantInt::get(index_ty_, kParallelChunksPerTask)));
  llvm::Value* ranges = b_.CreateBinaryIntrinsic(
      llvm::Intrinsic::smin, b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, nt, chunks),
      llvm::ConstantInt::get(index_ty_, kParallelHomeRanges));
  llvm::Value* home = b_.CreateSRem(CastInt(closure->getArg(0), index_ty_, true), ranges);
  counters = b_.CreateLoad(ptr_, b_.CreateStructGEP(cdata_ty, cd, counter_field));
  auto* entry_end = b_.GetInsertBlock();
  auto* next_range = llvm::BasicBlock::Create(ctx_, "next_range", closure);
  auto* open_range = llvm::BasicBlock::Create(ctx_, "open_range", closure);
  auto* take = llvm::BasicBlock::Create(ctx_, "take_chunk", closure);
  auto* run = llvm::BasicBlock::Create(ctx_, "run_chunk", closure);
  auto* range_done = llvm::BasicBlock::Create(ctx_, "range_done", closure);
  auto* done = llvm::BasicBlock::Create(ctx_, "chunks_done", closure);
  b_.CreateBr(next_range);
  // Ranges home, home + 1, ..., wrapping around.
  b_.SetInsertPoint(next_range);
  llvm::PHINode* visited = b_.CreatePHI(index_ty_, 2, "ranges_visited");
  visited->addIncoming(zero, entry_end);
  b_.CreateCondBr(b_.CreateICmpSLT(visited, ranges), open_range, done);
  b_.SetInsertPoint(open_range);
  llvm::Value* r = b_.CreateAdd(home, visited);
  r = b_.CreateSelect(b_.CreateICmpSGE(r, ranges), b_.CreateSub(r, ranges), r);
  llvm::Value* first = b_.CreateSDiv(b_.CreateMul(r, chunks), ranges);
  llvm::Value* last = b_.CreateSDiv(b_.CreateMul(b_.CreateAdd(r, one), chunks), ranges);
  llvm::Value* counter = b_.CreateInBoundsGEP(
      i32_, counters, b_.CreateMul(r, llvm::ConstantInt::get(index_ty_, kCounterStride)));
  b_.CreateBr(take);
  b_.SetInsertPoint(take);
  llvm::Value* claimed = b_.CreateAtomicRMW(llvm::AtomicRMWInst::Add, counter, b_.getInt32(1),
                                            llvm::MaybeAlign(4), llvm::AtomicOrdering::Monotonic);
  llvm::Value* c = b_.CreateAdd(first, CastInt(claimed, index_ty_, true));
  b_.CreateCondBr(b_.CreateICmpSLT(c, last), run, range_done);
  b_.SetInsertPoint(run);
  // Chunk c is iterations [c * extent / chunks, (c + 1) * extent / chunks): sizes differ by one
  // at most, so each home range holds its share of the loop. (Chunks of ceil(extent / chunks)
  // left the last ones empty: 9 iterations on two threads made home ranges of 8 and 1, and the
  // second thread took the first's rows, from the first core's cache.)
  // In 64 bits: c * extent may not fit a 32-bit target's index type.
  auto bound = [&](llvm::Value* k) {
    llvm::Value* wide =
        b_.CreateSDiv(b_.CreateMul(CastInt(k, i64_, true), llvm::ConstantInt::get(i64_, f->extent)),
                      CastInt(chunks, i64_, true));
    return CastInt(wide, index_ty_, true);
  };
  llvm::Value* begin = bound(c);
  llvm::Value* end = bound(b_.CreateAdd(c, one));
  EmitLoop(f->var, begin, end, 0, f->body);
  b_.CreateBr(take);
  b_.SetInsertPoint(range_done);
  visited->addIncoming(b_.CreateAdd(visited, one), range_done);
  b_.CreateBr(next_range);
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
