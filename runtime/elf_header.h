// The e_machine field of an ELF file: read by the runtime (why a library would not load here)
// and by the remote tools (which board runtime an artifact needs). Header-only so the host tools
// share it without linking the runtime's hidden internals.
#ifndef EMBER_RUNTIME_ELF_HEADER_H_
#define EMBER_RUNTIME_ELF_HEADER_H_

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace ember::runtime {

enum class ElfRead { kOk, kUnreadable, kNotElf };

/*! \brief Reads the ELF e_machine of `path` (EM_X86_64, EM_AARCH64, EM_ARM, ...) into *machine. */
inline ElfRead ReadElfMachine(const std::string& path, uint16_t* machine) {
  // e_ident, e_type and e_machine sit at the same offsets in 32- and 64-bit headers.
  unsigned char header[sizeof(Elf32_Ehdr)] = {};
  std::ifstream f(path, std::ios::binary);
  if (!f) return ElfRead::kUnreadable;
  if (!f.read(reinterpret_cast<char*>(header), sizeof(header))) return ElfRead::kNotElf;
  if (header[EI_MAG0] != ELFMAG0 || header[EI_MAG1] != ELFMAG1 || header[EI_MAG2] != ELFMAG2 ||
      header[EI_MAG3] != ELFMAG3) {
    return ElfRead::kNotElf;
  }
  constexpr size_t kMachineOffset = offsetof(Elf32_Ehdr, e_machine);
  static_assert(kMachineOffset == offsetof(Elf64_Ehdr, e_machine), "ELF layouts differ");
  uint16_t lo = header[kMachineOffset], hi = header[kMachineOffset + 1];
  *machine = header[EI_DATA] == ELFDATA2MSB ? static_cast<uint16_t>(lo << 8 | hi)
                                            : static_cast<uint16_t>(hi << 8 | lo);
  return ElfRead::kOk;
}

}  // namespace ember::runtime

#endif  // EMBER_RUNTIME_ELF_HEADER_H_
