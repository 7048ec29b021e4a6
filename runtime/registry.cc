// The global function table. Entries are never freed while the process runs, so a pointer from
// Registry::Get stays valid even if the name is removed or overridden meanwhile.
#include <ember/runtime/registry.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "minimal.h"

namespace ember::runtime {

class RegistryTable {
 public:
  static RegistryTable& Global() {
    // Leaked on purpose: registrations and lookups may run during other static (de)initialisers.
    static RegistryTable* table = new RegistryTable();
    return *table;
  }

  Registry& Register(const std::string& name, bool can_override) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) {
      EMBER_CHECK(can_override) << "global function \"" << name
                                << "\" is already registered; pass override to replace it";
      retired_.push_back(std::move(it->second));
      entries_.erase(it);
    }
    std::unique_ptr<Registry> entry(new Registry(name));
    Registry* raw = entry.get();
    entries_.emplace(name, std::move(entry));
    return *raw;
  }

  void SetBody(Registry* entry, PackedFunc f) {
    std::lock_guard<std::mutex> lock(mutex_);
    entry->func_ = std::move(f);
  }

  bool Remove(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) return false;
    retired_.push_back(std::move(it->second));
    entries_.erase(it);
    return true;
  }

  const PackedFunc* Get(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end() || it->second->func_ == nullptr) return nullptr;
    return &it->second->func_;
  }

#if !EMBER_RUNTIME_MINIMAL
  std::vector<std::string> ListNames() {
    std::vector<std::string> names;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      names.reserve(entries_.size());
      for (const auto& kv : entries_) names.push_back(kv.first);
    }
    std::sort(names.begin(), names.end());
    return names;
  }
#endif

 private:
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Registry>> entries_;
  // Removed or overridden entries: kept so that pointers handed out by Get never dangle.
  std::vector<std::unique_ptr<Registry>> retired_;
};

Registry& Registry::set_body(PackedFunc f) {
  RegistryTable::Global().SetBody(this, std::move(f));
  return *this;
}

Registry& Registry::Register(const std::string& name, bool can_override) {
  return RegistryTable::Global().Register(name, can_override);
}

bool Registry::Remove(const std::string& name) { return RegistryTable::Global().Remove(name); }

const PackedFunc* Registry::Get(const std::string& name) {
  return RegistryTable::Global().Get(name);
}

#if !EMBER_RUNTIME_MINIMAL
std::vector<std::string> Registry::ListNames() { return RegistryTable::Global().ListNames(); }
#endif

}  // namespace ember::runtime
