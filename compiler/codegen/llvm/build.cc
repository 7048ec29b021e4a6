// BuildKernelLibrary: lower every fused group into a module of its own, optimise and emit the
// modules as objects on a pool of threads, and link the objects in kernel order with ld.lld
// into lib.so (or one relocatable object for --system-lib). One module per kernel rather than
// per thread keeps the bytes of the library independent of the thread count.
#include <ember/compiler/ir/fused_group.h>
#include <ember/compiler/ir/tensor_type.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/GlobalAlias.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Object/Archive.h>
#include <llvm/Object/ArchiveWriter.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <thread>

#include "codegen_llvm.h"
#include "ember/compiler/codegen.h"
#include "ember/compiler/lower.h"
#include "emit_objects.h"
#include "kernel_key.h"
#include "link.h"

namespace ember::compiler {

namespace {

using Clock = std::chrono::steady_clock;

// One LLVM context and module; each is optimised and emitted on one thread at a time.
struct Unit {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> module;
};

Unit NewUnit(const std::string& name, const Target& target, const llvm::DataLayout& layout) {
  Unit u;
  u.ctx = std::make_unique<llvm::LLVMContext>();
  // Optimisation remarks and "loop not vectorized" warnings are not the user's business; errors
  // are.
  u.ctx->setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo* di, void*) {
        if (di->getSeverity() != llvm::DS_Error) return;
        std::string msg;
        llvm::raw_string_ostream os(msg);
        llvm::DiagnosticPrinterRawOStream dp(os);
        di->print(dp);
        std::cerr << "emberc: LLVM error: " << os.str() << "\n";
      },
      nullptr);
  u.module = std::make_unique<llvm::Module>(name, *u.ctx);
  u.module->setTargetTriple(target.triple);
  u.module->setDataLayout(layout);
  return u;
}

void AddAlias(llvm::Function* target, const std::string& name) {
  auto* alias = llvm::GlobalAlias::create(target->getFunctionType(), 0,
                                          llvm::GlobalValue::ExternalLinkage, name, target);
  alias->setVisibility(llvm::GlobalValue::DefaultVisibility);
}

void Verify(const llvm::Module& m) {
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(m, &vos)) {
    throw CompileError("codegen: invalid module " + m.getName().str() + ": " + vos.str());
  }
}

std::string ModuleText(const llvm::Module& m) {
  std::string ll;
  llvm::raw_string_ostream os(ll);
  m.print(os, nullptr);
  return os.str();
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  f.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!f) throw CompileError("cannot write " + path);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f) throw CompileError("cannot read " + path);
  return data;
}

void WriteArchive(const std::string& obj, const std::string& out_path) {
  llvm::NewArchiveMember member(llvm::MemoryBufferRef(obj, "ember_kernels.o"));
  member.MemberName = "ember_kernels.o";
  std::vector<llvm::NewArchiveMember> members;
  members.push_back(std::move(member));
  if (llvm::Error e = llvm::writeArchive(out_path, members, llvm::SymtabWritingMode::NormalSymtab,
                                         llvm::object::Archive::K_GNU, true, false)) {
    throw CompileError("cannot write archive " + out_path + ": " + llvm::toString(std::move(e)));
  }
}

// Writes the objects beside out_path, links them (in task order) and removes them.
void LinkObjects(const std::vector<codegen::ObjectTask>& tasks, const std::string& out_path,
                 const BuildOptions& opts) {
  std::vector<std::string> paths;
  auto cleanup = [&] {
    for (const std::string& p : paths) llvm::sys::fs::remove(p);
  };
  try {
    for (size_t i = 0; i < tasks.size(); ++i) {
      paths.push_back(out_path + ".part" + std::to_string(i) + ".o");
      WriteFile(paths.back(), tasks[i].object);
    }
    if (!opts.system_lib) {
      codegen::LinkShared(opts.linker, paths, out_path);
    } else if (llvm::StringRef(out_path).ends_with(".a")) {
      // One member, so a static link that pulls in any kernel pulls in the registration too.
      std::string merged = out_path + ".merged.o";
      paths.push_back(merged);
      codegen::LinkRelocatable(opts.linker, {paths.begin(), paths.end() - 1}, merged);
      WriteArchive(ReadFile(merged), out_path);
    } else {
      codegen::LinkRelocatable(opts.linker, paths, out_path);
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
}

}  // namespace

int ResolveJobs(int jobs) {
  if (jobs > 0) return jobs;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

void BuildKernelLibrary(const std::vector<FusedGroup>& groups, const Target& target,
                        const std::string& out_path, const BuildOptions& opts) {
  auto t0 = Clock::now();
  const llvm::DataLayout layout =
      codegen::MakeTargetMachine(target, opts.opt_level)->createDataLayout();
  // Unit 0 defines __tvm_module_ctx (and registers the kernels for --system-lib); the kernel
  // units only declare it.
  std::vector<Unit> units;
  units.push_back(NewUnit("ember_module", target, layout));
  codegen::CodeGenLLVM module_cg(units[0].module.get(), target, true);
  module_cg.ModuleCtx();
  lower::ScheduleOptions sched;
  sched.target = &target;
  sched.tuning_log = opts.tuning_log;
  sched.scheduler = opts.scheduler;
  std::vector<std::string> func_names;
  std::string loop_text;
  // A group whose function is structurally identical to an earlier one's (MobileNetV2 repeats
  // its blocks) becomes an alias of that function: every name stays exported, the code is
  // optimised and emitted once.
  std::map<std::string, llvm::Function*> by_key;
  double key_ms = 0;
  for (const FusedGroup& g : groups) {
    lower::LoweredFunc f = lower::LowerGroup(g, sched);
    f.exact_float = opts.exact_float_groups.count(g.func_name) != 0;
    if (!opts.dump_dir.empty()) loop_text += lower::ToText(f) + "\n";
    func_names.push_back(f.name);
    auto tk = Clock::now();
    std::string key = codegen::StructuralKey(f, target, layout);
    key_ms += std::chrono::duration<double, std::milli>(Clock::now() - tk).count();
    auto it = by_key.find(key);
    if (it != by_key.end()) {
      AddAlias(it->second, f.name);
      continue;
    }
    units.push_back(NewUnit(f.name, target, layout));
    codegen::CodeGenLLVM cg(units.back().module.get(), target, false);
    by_key.emplace(std::move(key), cg.AddFunction(f));
  }
  if (opts.system_lib) module_cg.AddSystemLibRegistration(func_names);
  for (const Unit& u : units) Verify(*u.module);
  auto t1 = Clock::now();
  const bool dump = !opts.dump_dir.empty();
  if (dump) {
    WriteFile(opts.dump_dir + "/kernels.loop.txt", loop_text);
    std::string ll;
    for (const Unit& u : units) ll += ModuleText(*u.module);
    WriteFile(opts.dump_dir + "/kernels.ll", ll);
  }
  std::vector<codegen::ObjectTask> tasks(units.size());
  for (size_t i = 0; i < units.size(); ++i) {
    tasks[i].module = units[i].module.get();
    tasks[i].keep_optimized_ir = dump;
  }
  const int threads =
      codegen::OptimizeAndEmit(&tasks, target, opts.opt_level, ResolveJobs(opts.jobs));
  for (const codegen::ObjectTask& task : tasks) {
    if (!task.error.empty()) {
      throw CompileError("codegen of " + task.module->getName().str() + ": " + task.error);
    }
  }
  auto t2 = Clock::now();
  if (dump) {
    std::string ll;
    for (const codegen::ObjectTask& task : tasks) ll += task.optimized_ir;
    WriteFile(opts.dump_dir + "/kernels.opt.ll", ll);
  }
  LinkObjects(tasks, out_path, opts);
  auto t3 = Clock::now();
  if (opts.verbose) {
    auto ms = [](auto a, auto b) {
      return std::chrono::duration<double, std::milli>(b - a).count();
    };
    double opt_ms = 0, emit_ms = 0;
    for (const codegen::ObjectTask& task : tasks) {
      opt_ms += task.opt_ms;
      emit_ms += task.emit_ms;
    }
    std::cerr << "[emberc] kernels: lower+codegen " << ms(t0, t1) << " ms (" << key_ms
              << " ms of it comparing kernels), llvm opt " << opt_ms << " ms + object " << emit_ms
              << " ms of thread time in " << ms(t1, t2) << " ms wall on " << threads
              << " threads, link " << ms(t2, t3) << " ms (" << groups.size() << " functions, "
              << by_key.size() << " distinct, " << tasks.size() << " objects, target "
              << target.str() << ")\n";
  }
}

}  // namespace ember::compiler
