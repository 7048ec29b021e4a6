// Optimising LLVM modules and emitting their objects, one module per task on a pool of threads
// (private to compiler/codegen/llvm).
#ifndef EMBER_COMPILER_CODEGEN_LLVM_EMIT_OBJECTS_H_
#define EMBER_COMPILER_CODEGEN_LLVM_EMIT_OBJECTS_H_

#include <llvm/IR/Module.h>
#include <llvm/Target/TargetMachine.h>

#include <memory>
#include <string>
#include <vector>

#include "ember/compiler/target.h"

namespace ember::compiler::codegen {

/*! \brief A machine for target at opt_level (0..3); throws CompileError naming the target. */
std::unique_ptr<llvm::TargetMachine> MakeTargetMachine(const Target& target, int opt_level);

/*! \brief One module to optimise and emit; each module must own its LLVMContext, since the
 * tasks run on several threads at once. */
struct ObjectTask {
  llvm::Module* module = nullptr;
  bool keep_optimized_ir = false;  // fill optimized_ir (for --dump-ir)
  std::string object;              // the emitted object file
  std::string optimized_ir;
  std::string error;  // non-empty when this task failed
  double opt_ms = 0;
  double emit_ms = 0;
};

/*! \brief Runs every task on min(threads, tasks) threads (threads >= 1). A task's output does
 * not depend on the thread that ran it. Returns the number of threads used. */
int OptimizeAndEmit(std::vector<ObjectTask>* tasks, const Target& target, int opt_level,
                    int threads);

}  // namespace ember::compiler::codegen

#endif  // EMBER_COMPILER_CODEGEN_LLVM_EMIT_OBJECTS_H_
