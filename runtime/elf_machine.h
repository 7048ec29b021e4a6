// Why a shared library would not load here: read from its ELF header, not guessed from dlerror().
#ifndef EMBER_RUNTIME_ELF_MACHINE_H_
#define EMBER_RUNTIME_ELF_MACHINE_H_

#include <string>

namespace ember::runtime {

/*!
 * \brief "built for aarch64, this machine is x86-64" when \p path is an ELF file for another
 * architecture; "" when it matches this machine or is not an ELF file it can read.
 */
std::string ElfMachineMismatch(const std::string& path);

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_ELF_MACHINE_H_
