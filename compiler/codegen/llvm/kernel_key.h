// Structural keys of lowered functions, so that identical fused groups share one function
// (private to compiler/codegen/llvm).
#ifndef EMBER_COMPILER_CODEGEN_LLVM_KERNEL_KEY_H_
#define EMBER_COMPILER_CODEGEN_LLVM_KERNEL_KEY_H_

#include <llvm/IR/DataLayout.h>

#include <string>

#include "ember/compiler/lower.h"
#include "ember/compiler/target.h"

namespace ember::compiler::codegen {

/*!
 * \brief The LLVM IR (as bitcode) f generates with its own name and its arguments' names replaced
 * by placeholders and local value names dropped: two functions with equal keys compute the same
 * thing from the same argument shapes, so one can stand for the other.
 */
std::string StructuralKey(const lower::LoweredFunc& f, const Target& target,
                          const llvm::DataLayout& layout);

}  // namespace ember::compiler::codegen

#endif  // EMBER_COMPILER_CODEGEN_LLVM_KERNEL_KEY_H_
