// The DSO module: a shared library (lib.so) opened with dlopen; each exported
// TVMBackendPackedCFunc becomes a PackedFunc.
#include <dlfcn.h>
#include <ember/runtime/registry.h>

#include <string>

#include "library_module.h"

namespace ember::runtime {
namespace {

class DSOModuleNode final : public ModuleNode {
 public:
  ~DSOModuleNode() override {
    if (handle_ != nullptr) dlclose(handle_);
  }

  const char* type_key() const final { return "library"; }

  void Load(const std::string& path) {
    path_ = path;
    dlerror();
    handle_ = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* err = dlerror();
      EMBER_LOG_FATAL << "cannot load library " << path << ": " << (err ? err : "dlopen failed")
                      << " (is it a shared library for this "
                      << "machine?)";
    }
  }

  void* GetSymbol(const char* name) const { return dlsym(handle_, name); }

  PackedFunc GetFunction(const String& name, const ObjectPtr<Object>& sptr_to_self) final {
    std::string sym = name.str();
    if (sym == symbol::kMainFunc) {
      // A char array holding the entry function's name, as TVM's codegen emits it.
      auto* entry = static_cast<const char*>(GetSymbol(symbol::kMainFunc));
      if (entry == nullptr) return PackedFunc();
      sym = entry;
    }
    auto f = reinterpret_cast<TVMBackendPackedCFunc>(GetSymbol(sym.c_str()));
    if (f == nullptr) return PackedFunc();
    return WrapPackedCFunc(f, sptr_to_self, sym);
  }

  const std::string& path() const { return path_; }

 private:
  void* handle_{nullptr};
  std::string path_;
};

Module LoadDSO(const std::string& path) {
  auto node = make_object<DSOModuleNode>();
  node->Load(path);
  DSOModuleNode* raw = node.get();
  InitLibraryContext([raw](const char* name) { return raw->GetSymbol(name); }, raw);
  Module lib(node);
  if (const char* blob = static_cast<const char*>(raw->GetSymbol(symbol::kDevModuleBlob))) {
    return ProcessLibraryBlob(blob, lib, path);
  }
  return lib;
}

EMBER_REGISTER_GLOBAL("runtime.module.loadfile_so")
    .set_body_typed([](std::string path, std::string) { return LoadDSO(path); });

}  // namespace
}  // namespace ember::runtime
