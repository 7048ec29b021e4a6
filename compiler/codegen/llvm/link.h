// Running ld.lld on the kernel objects (private to compiler/codegen/llvm).
#ifndef EMBER_COMPILER_CODEGEN_LLVM_LINK_H_
#define EMBER_COMPILER_CODEGEN_LLVM_LINK_H_

#include <string>
#include <vector>

namespace ember::compiler::codegen {

/*! \brief Links the objects, in the given order, into a shared library at out_path with
 * `linker` (an ld.lld; empty: the one CMake found). */
void LinkShared(const std::string& linker, const std::vector<std::string>& obj_paths,
                const std::string& out_path);

/*! \brief Links the objects, in the given order, into one relocatable object at out_path (the
 * --system-lib form). */
void LinkRelocatable(const std::string& linker, const std::vector<std::string>& obj_paths,
                     const std::string& out_path);

}  // namespace ember::compiler::codegen

#endif  // EMBER_COMPILER_CODEGEN_LLVM_LINK_H_
