// BuildKernelLibrary: lower every fused group, generate one LLVM module, optimise it for the
// target machine, emit one object and link it with ld.lld into lib.so (or keep the object for
// --system-lib).
#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/tensor_type.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Verifier.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/TargetParser/Triple.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>

#include "codegen_llvm.h"
#include "ember/compiler/codegen.h"
#include "ember/compiler/lower.h"

#ifndef EMBER_LLD_DEFAULT
#define EMBER_LLD_DEFAULT "ld.lld-19"
#endif

namespace ember::compiler {

namespace {

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

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw CompileError("cannot write " + path);
}

std::string LinkerPath() {
  const char* env = std::getenv("EMBER_LLD");
  if (env && *env) return env;
  return EMBER_LLD_DEFAULT;
}

void LinkShared(const std::string& obj_path, const std::string& out_path) {
  std::string lld = LinkerPath();
  auto found = llvm::sys::findProgramByName(lld);
  if (!found) {
    throw CompileError("linker '" + lld + "' not found (set EMBER_LLD to the path of ld.lld-19)");
  }
  std::string err_file = out_path + ".link.log";
  std::vector<llvm::StringRef> argv = {*found,        "-shared", "--eh-frame-hdr", "-z",
                                       "noexecstack", "-o",      out_path,         obj_path};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(err_file),
                                                llvm::StringRef(err_file)};
  std::string msg;
  int rc = llvm::sys::ExecuteAndWait(*found, argv, std::nullopt, redirects, 0, 0, &msg);
  std::ifstream logf(err_file);
  std::string log((std::istreambuf_iterator<char>(logf)), std::istreambuf_iterator<char>());
  llvm::sys::fs::remove(err_file);
  if (rc != 0) {
    throw CompileError("linking " + out_path + " with " + *found + " failed (" +
                       (msg.empty() ? "exit " + std::to_string(rc) : msg) + "): " + log);
  }
}

}  // namespace

void BuildKernelLibrary(const std::vector<FusedGroup>& groups, const Target& target,
                        const std::string& out_path, const BuildOptions& opts) {
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto tm = MakeTargetMachine(target, opts.opt_level);
  llvm::LLVMContext ctx;
  // Optimisation remarks and "loop not vectorized" warnings are not the user's business; errors
  // are.
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* di, void*) {
        if (di->getSeverity() != llvm::DS_Error) return;
        std::string msg;
        llvm::raw_string_ostream os(msg);
        llvm::DiagnosticPrinterRawOStream dp(os);
        di->print(dp);
        std::cerr << "emberc: LLVM error: " << os.str() << "\n";
      },
      nullptr);
  auto module = std::make_unique<llvm::Module>("ember_kernels", ctx);
  module->setTargetTriple(target.triple);
  module->setDataLayout(tm->createDataLayout());
  codegen::CodeGenLLVM cg(module.get(), target);
  cg.ModuleCtx();
  lower::ScheduleOptions sched;
  sched.target = &target;
  sched.tuning_log = opts.tuning_log;
  std::vector<llvm::Function*> funcs;
  std::string loop_text;
  for (const FusedGroup& g : groups) {
    lower::LoweredFunc f = lower::LowerGroup(g, sched);
    if (!opts.dump_dir.empty()) loop_text += lower::ToText(f) + "\n";
    funcs.push_back(cg.AddFunction(f));
  }
  if (opts.system_lib) cg.AddSystemLibRegistration(funcs);
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(*module, &vos))
    throw CompileError("codegen: invalid module: " + vos.str());
  auto t1 = Clock::now();
  if (!opts.dump_dir.empty()) {
    WriteFile(opts.dump_dir + "/kernels.loop.txt", loop_text);
    std::string ll;
    llvm::raw_string_ostream los(ll);
    module->print(los, nullptr);
    WriteFile(opts.dump_dir + "/kernels.ll", los.str());
  }
  Optimize(module.get(), tm.get(), opts.opt_level);
  if (!opts.dump_dir.empty()) {
    std::string ll;
    llvm::raw_string_ostream los(ll);
    module->print(los, nullptr);
    WriteFile(opts.dump_dir + "/kernels.opt.ll", los.str());
  }
  auto t2 = Clock::now();
  std::string obj = EmitObject(module.get(), tm.get());
  auto t3 = Clock::now();
  if (opts.system_lib) {
    if (llvm::StringRef(out_path).ends_with(".a")) {
      llvm::NewArchiveMember member(llvm::MemoryBufferRef(obj, "ember_kernels.o"));
      member.MemberName = "ember_kernels.o";
      std::vector<llvm::NewArchiveMember> members;
      members.push_back(std::move(member));
      if (llvm::Error e =
              llvm::writeArchive(out_path, members, llvm::SymtabWritingMode::NormalSymtab,
                                 llvm::object::Archive::K_GNU, true, false)) {
        throw CompileError("cannot write archive " + out_path + ": " +
                           llvm::toString(std::move(e)));
      }
    } else {
      WriteFile(out_path, obj);
    }
  } else {
    std::string obj_path = out_path + ".o";
    WriteFile(obj_path, obj);
    try {
      LinkShared(obj_path, out_path);
    } catch (...) {
      llvm::sys::fs::remove(obj_path);
      throw;
    }
    llvm::sys::fs::remove(obj_path);
  }
  auto t4 = Clock::now();
  if (opts.verbose) {
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    std::cerr << "[emberc] kernels: lower+codegen " << ms(t0, t1) << " ms, llvm opt " << ms(t1, t2)
              << " ms, object " << ms(t2, t3) << " ms, link " << ms(t3, t4) << " ms ("
              << groups.size() << " functions, target " << target.str() << ")\n";
  }
}

}  // namespace ember::compiler
