#include "emit_objects.h"

#include <ember/compiler/ir/tensor_type.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <thread>
#include <utility>
#include <vector>

namespace ember::compiler::codegen {

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

void Optimize(llvm::Module* m, llvm::TargetMachine* tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = opt_level >= 2;
  pto.SLPVectorization = opt_level >= 2;
  llvm::PassBuilder pb(tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm;
  if (opt_level <= 0) {
    mpm = pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0);
  } else {
    llvm::OptimizationLevel lvl = opt_level == 1   ? llvm::OptimizationLevel::O1
                                  : opt_level == 2 ? llvm::OptimizationLevel::O2
                                                   : llvm::OptimizationLevel::O3;
    mpm = pb.buildPerModuleDefaultPipeline(lvl);
  }
  mpm.run(*m, mam);
}

std::string EmitObject(llvm::Module* m, llvm::TargetMachine* tm) {
  llvm::SmallVector<char, 0> buf;
  llvm::raw_svector_ostream os(buf);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
    throw CompileError("LLVM cannot emit an object file for " + tm->getTargetTriple().str());
  }
  pm.run(*m);
  return std::string(buf.begin(), buf.end());
}

size_t InstructionCount(const llvm::Module& m) {
  size_t n = 0;
  for (const llvm::Function& f : m) n += f.getInstructionCount();
  return n;
}

void RunTask(ObjectTask* task, llvm::TargetMachine* tm, int opt_level) {
  auto t0 = Clock::now();
  Optimize(task->module, tm, opt_level);
  if (task->keep_optimized_ir) {
    llvm::raw_string_ostream os(task->optimized_ir);
    task->module->print(os, nullptr);
  }
  task->opt_ms = MsSince(t0);
  t0 = Clock::now();
  task->object = EmitObject(task->module, tm);
  task->emit_ms = MsSince(t0);
}

}  // namespace

std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const Target& target, int opt_level) {
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(target.triple, err);
  if (t == nullptr) throw CompileError("target " + target.str() + ": " + err);
  llvm::TargetOptions opts;
  // Static initialisers of --system-lib objects go to .init_array, which every ELF libc runs.
  opts.UseInitArray = true;
  llvm::Triple triple(target.triple);
  if (triple.isARM()) opts.FloatABIType = llvm::FloatABI::Hard;
  llvm::CodeGenOptLevel level = opt_level <= 0   ? llvm::CodeGenOptLevel::None
                                : opt_level == 1 ? llvm::CodeGenOptLevel::Less
                                : opt_level == 2 ? llvm::CodeGenOptLevel::Default
                                                 : llvm::CodeGenOptLevel::Aggressive;
  std::unique_ptr<llvm::TargetMachine> tm(t->createTargetMachine(
      target.triple, target.cpu, target.features, opts, llvm::Reloc::PIC_, std::nullopt, level));
  if (!tm) throw CompileError("target " + target.str() + ": LLVM could not create a machine");
  return tm;
}

int OptimizeAndEmit(std::vector<ObjectTask>* tasks, const Target& target, int opt_level,
                    int threads) {
  const int n = static_cast<int>(tasks->size());
  const int used = std::max(1, std::min(threads, n));
  // Largest modules first, so that no thread starts a big one while the others run out of work.
  std::vector<std::pair<size_t, int>> order;
  for (int i = 0; i < n; ++i) order.emplace_back(InstructionCount(*(*tasks)[i].module), i);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::atomic<int> next{0};
  // Each thread has its own TargetMachine: LLVM does not promise one is safe to share.
  auto work = [&] {
    std::unique_ptr<llvm::TargetMachine> tm;
    for (int i = next++; i < n; i = next++) {
      ObjectTask& task = (*tasks)[order[i].second];
      try {
        if (!tm) tm = MakeTargetMachine(target, opt_level);
        RunTask(&task, tm.get(), opt_level);
      } catch (const std::exception& e) {
        task.error = e.what();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < used; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  return used;
}

}  // namespace ember::compiler::codegen
