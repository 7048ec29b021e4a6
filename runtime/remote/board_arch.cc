// ELF machine of artifacts and runtimes, and the runtime cache (see board_arch.h).
#include "board_arch.h"

#include <elf.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "elf_header.h"

namespace ember::remote {

namespace {

namespace fs = std::filesystem;

std::string FindSoname(const fs::path& lib_dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(lib_dir, ec)) {
    std::string name = e.path().filename().string();
    const std::string prefix = "libember_runtime.so.";
    // The soname has one number after ".so." (libember_runtime.so.0), not the full version.
    if (name.rfind(prefix, 0) == 0 && name.find('.', prefix.size()) == std::string::npos) {
      return name;
    }
  }
  return "";
}

bool TryRoot(const fs::path& root, const std::string& arch, BoardRuntime* out) {
  fs::path exe = root / "bin" / "ember-run";
  std::error_code ec;
  if (!fs::is_regular_file(exe, ec)) return false;
  std::string soname = FindSoname(root / "lib");
  if (soname.empty()) return false;
  try {
    if (ElfArch(exe.string()) != arch) return false;
  } catch (const std::exception&) {
    return false;
  }
  *out = BoardRuntime{arch, exe.string(), (root / "lib" / soname).string(), soname};
  return true;
}

}  // namespace

std::vector<std::string> RuntimeSearchDirs(std::vector<std::string> flag_dirs) {
  const char* env = std::getenv("EMBER_RUNTIME_DIRS");
  std::stringstream in(env == nullptr ? "" : env);
  for (std::string d; std::getline(in, d, ':');) {
    if (!d.empty()) flag_dirs.push_back(d);
  }
  return flag_dirs;
}

std::string ElfArch(const std::string& path) {
  uint16_t machine = EM_NONE;
  switch (runtime::ReadElfMachine(path, &machine)) {
    case runtime::ElfRead::kUnreadable:
      throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    case runtime::ElfRead::kNotElf:
      throw std::runtime_error(path + " is not an ELF file, so its architecture is unknown");
    case runtime::ElfRead::kOk:
      break;
  }
  switch (machine) {
    case EM_X86_64:
      return "x86_64";
    case EM_AARCH64:
      return "aarch64";
    case EM_ARM:
      return "armhf";
    default:
      throw std::runtime_error(path + ": ELF machine " + std::to_string(machine) +
                               " is not one a board runs (x86_64, aarch64, armhf)");
  }
}

std::string ArtifactLibrary(const std::string& artifact) {
  std::error_code ec;
  if (fs::is_directory(artifact, ec)) return (fs::path(artifact) / "lib.so").string();
  return artifact;
}

BoardRuntime FindBoardRuntime(const std::string& arch, const std::vector<std::string>& search_dirs,
                              const std::string& self_exe) {
  BoardRuntime found;
  std::string looked;
  for (const std::string& dir : search_dirs) {
    for (const fs::path& root :
         {fs::path(dir) / ("cross-" + arch), fs::path(dir) / arch, fs::path(dir)}) {
      if (TryRoot(root, arch, &found)) return found;
      looked += (looked.empty() ? "" : ", ") + root.string();
    }
  }
  if (!self_exe.empty()) {
    fs::path root = fs::path(self_exe).parent_path().parent_path();
    if (TryRoot(root, arch, &found)) return found;
    looked += (looked.empty() ? "" : ", ") + root.string() + " (this ember-run)";
  }
  throw std::runtime_error(
      "no ember-run built for " + arch + " (the artifact's architecture); looked in " +
      (looked.empty() ? "nothing" : looked) + ". Build one (tests/cross/run_cross.sh --arch " +
      arch + " makes build/cross-" + arch +
      ") and name its parent with --runtime-dir DIR or "
      "EMBER_RUNTIME_DIRS=DIR[:DIR...]");
}

}  // namespace ember::remote
