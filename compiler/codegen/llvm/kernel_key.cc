#include "kernel_key.h"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen_llvm.h"

namespace ember::compiler::codegen {

std::string StructuralKey(const lower::LoweredFunc& f, const Target& target,
                          const llvm::DataLayout& layout) {
  // The names only reach error messages and symbol names; anything else that differs (shapes,
  // schedule, constants, index-check messages naming nodes) keeps the keys apart.
  lower::LoweredFunc anon = f;
  anon.name = "__ember_kernel";
  for (size_t i = 0; i < anon.args.size(); ++i) anon.args[i].name = "arg" + std::to_string(i);
  llvm::LLVMContext ctx;
  ctx.setDiscardValueNames(true);
  llvm::Module module("key", ctx);
  module.setTargetTriple(target.triple);
  module.setDataLayout(layout);
  CodeGenLLVM cg(&module, target, false);
  cg.AddFunction(anon);
  // Bitcode rather than text: it is complete and several times faster to write.
  std::string bitcode;
  llvm::raw_string_ostream os(bitcode);
  llvm::WriteBitcodeToFile(module, os);
  return os.str();
}

}  // namespace ember::compiler::codegen
