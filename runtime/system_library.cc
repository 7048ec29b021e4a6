// The system library: kernels linked statically into the program, published by the static
// initialisers of a --system-lib object through TVMBackendRegisterSystemLibSymbol.
#include <ember/runtime/registry.h>

#include <mutex>
#include <string>
#include <unordered_map>

#include "library_module.h"

namespace ember::runtime {
namespace {

class SystemLibSymbols {
 public:
  static SystemLibSymbols& Global() {
    // Created on first use: registrations run during other translation units' static init.
    static SystemLibSymbols* table = new SystemLibSymbols();
    return *table;
  }

  void Register(const std::string& name, void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = symbols_.find(name);
    if (it != symbols_.end() && it->second != ptr) {
      EMBER_LOG_WARNING << "system library symbol " << name
                        << " registered twice; keeping the last";
    }
    symbols_[name] = ptr;
  }

  void* Get(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = symbols_.find(name);
    return it == symbols_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, void*> symbols_;
};

class SystemLibraryNode final : public LibraryModuleNode {
 public:
  explicit SystemLibraryNode(std::string prefix) : prefix_(std::move(prefix)) {}

  const char* type_key() const final { return "system_lib"; }

  void* GetSymbol(const char* name) const final {
    return SystemLibSymbols::Global().Get(prefix_ + name);
  }

 private:
  std::string prefix_;
};

Module GetSystemLib(const std::string& prefix) {
  static std::mutex mutex;
  static auto* libs = new std::unordered_map<std::string, Module>();
  std::lock_guard<std::mutex> lock(mutex);
  auto it = libs->find(prefix);
  if (it != libs->end()) return it->second;
  Module root = InitLibraryModule(make_object<SystemLibraryNode>(prefix), "system library");
  libs->emplace(prefix, root);
  return root;
}

}  // namespace

EMBER_REGISTER_GLOBAL("runtime.SystemLib").set_body([](TVMArgs args, TVMRetValue* rv) {
  std::string prefix = args.size() > 0 ? args[0].As<std::string>() : std::string();
  *rv = GetSystemLib(prefix);
});

}  // namespace ember::runtime

extern "C" int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr) {
  EMBER_API_BEGIN();
  EMBER_CHECK(name != nullptr) << "TVMBackendRegisterSystemLibSymbol: null name";
  ember::runtime::SystemLibSymbols::Global().Register(name, ptr);
  EMBER_API_END();
}
