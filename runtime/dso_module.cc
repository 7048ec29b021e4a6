// The DSO module: a shared library (lib.so) opened with dlopen; each exported
// TVMBackendPackedCFunc becomes a PackedFunc.
#include <dlfcn.h>
#include <ember/runtime/registry.h>

#include <string>

#include "elf_machine.h"
#include "library_module.h"

namespace ember::runtime {
namespace {

// dlopen searches the library path for a name without a slash; a path a user gives always means a
// file, so "model.so" is taken relative to the current directory like "./model.so".
std::string AsFilePath(const std::string& path) {
  return path.find('/') == std::string::npos ? "./" + path : path;
}

class DSOModuleNode final : public LibraryModuleNode {
 public:
  ~DSOModuleNode() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  const char* type_key() const final { return "library"; }

  void Load(const std::string& path) {
    path_ = path;
    dlerror();
    handle_ = dlopen(AsFilePath(path).c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* err = dlerror();
      // dlopen reports a foreign architecture as a missing file; the header says what it is.
      std::string mismatch = ElfMachineMismatch(path);
      if (!mismatch.empty()) EMBER_LOG_FATAL << "cannot load library " << path << ": " << mismatch;
      EMBER_LOG_FATAL << "cannot load library " << path << ": " << (err ? err : "dlopen failed")
                      << " (is it a shared library for this machine?)";
    }
  }

  void* GetSymbol(const char* name) const final { return dlsym(handle_, name); }

  const std::string& path() const { return path_; }

 private:
  void* handle_{nullptr};
  std::string path_;
};

Module LoadDSO(const std::string& path) {
  auto node = make_object<DSOModuleNode>();
  node->Load(path);
  return InitLibraryModule(std::move(node), path);
}

EMBER_REGISTER_GLOBAL("runtime.module.loadfile_so")
    .set_body_typed([](std::string path, std::string) { return LoadDSO(path); });

}  // namespace
}  // namespace ember::runtime
