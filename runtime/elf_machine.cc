// ELF e_machine of a file against the machine this runtime was built for.
#include "elf_machine.h"

#include <elf.h>

#include <cstdint>

#include "elf_header.h"

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
  uint16_t machine = EM_NONE;
  if (ReadElfMachine(path, &machine) != ElfRead::kOk) return "";
  if (machine == kHostMachine || kHostMachine == EM_NONE) return "";
  const char* file_name = MachineName(machine);
  std::string built_for =
      file_name ? std::string(file_name) : "ELF machine " + std::to_string(machine);
  return "built for " + built_for + ", this machine is " + MachineName(kHostMachine);
}

}  // namespace ember::runtime
