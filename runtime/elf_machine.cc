// ELF e_machine of a file against the machine this runtime was built for.
#include "elf_machine.h"

#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <fstream>

namespace ember::runtime {
namespace {

const char* MachineName(uint16_t machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86-64";
    case EM_386:
      return "x86 (32-bit)";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "arm (32-bit)";
    case EM_RISCV:
      return "riscv";
    case EM_PPC64:
      return "ppc64";
    case EM_S390:
      return "s390x";
    default:
      return nullptr;
  }
}

constexpr uint16_t kHostMachine =
#if defined(__x86_64__)
    EM_X86_64;
#elif defined(__i386__)
    EM_386;
#elif defined(__aarch64__)
    EM_AARCH64;
#elif defined(__arm__)
    EM_ARM;
#elif defined(__riscv)
    EM_RISCV;
#elif defined(__powerpc64__)
    EM_PPC64;
#elif defined(__s390x__)
    EM_S390;
#else
    EM_NONE;
#endif

}  // namespace

std::string ElfMachineMismatch(const std::string& path) {
  // e_ident, e_type and e_machine sit at the same offsets in 32- and 64-bit headers.
  unsigned char header[sizeof(Elf32_Ehdr)] = {};
  std::ifstream f(path, std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(header), sizeof(header))) return "";
  if (header[EI_MAG0] != ELFMAG0 || header[EI_MAG1] != ELFMAG1 || header[EI_MAG2] != ELFMAG2 ||
      header[EI_MAG3] != ELFMAG3) {
    return "";
  }
  constexpr size_t kMachineOffset = offsetof(Elf32_Ehdr, e_machine);
  static_assert(kMachineOffset == offsetof(Elf64_Ehdr, e_machine), "ELF layouts differ");
  uint16_t lo = header[kMachineOffset], hi = header[kMachineOffset + 1];
  uint16_t machine = header[EI_DATA] == ELFDATA2MSB ? static_cast<uint16_t>(lo << 8 | hi)
                                                    : static_cast<uint16_t>(hi << 8 | lo);
  if (machine == kHostMachine || kHostMachine == EM_NONE) return "";
  const char* file_name = MachineName(machine);
  std::string built_for =
      file_name ? std::string(file_name) : "ELF machine " + std::to_string(machine);
  return "built for " + built_for + ", this machine is " + MachineName(kHostMachine);
}

}  // namespace ember::runtime
