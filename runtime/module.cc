// ModuleNode's shared behaviour: lookups across imports, the kernel environment cache, and file
// loading by extension.
#include <ember/runtime/module.h>
#include <ember/runtime/registry.h>
#include <sys/stat.h>

#include <string>

namespace ember::runtime {

void ModuleNode::SaveToFile(const String& file_name, const String&) {
  EMBER_LOG_FATAL << "cannot save " << file_name << ": a " << type_key()
                  << " module does not support SaveToFile";
}

void ModuleNode::SaveToBinary(ByteWriter*) {
  EMBER_LOG_FATAL << "a " << type_key() << " module cannot be serialised (SaveToBinary)";
}

String ModuleNode::GetSource(const String&) { return String(); }

PackedFunc ModuleNode::GetFunction(const String& name, bool query_imports) {
  PackedFunc pf = GetFunction(name, GetObjectPtr<Object>(this));
  if (pf != nullptr || !query_imports) return pf;
  for (const Module& m : imports_) {
    pf = m->GetFunction(name, true);
    if (pf != nullptr) return pf;
  }
  return pf;
}

void ModuleNode::Import(Module other) {
  EMBER_CHECK(other.defined()) << "Import: cannot import a null module into " << type_key();
  // A cycle would keep both modules alive forever and make lookups loop.
  std::vector<const ModuleNode*> stack{other.get()};
  while (!stack.empty()) {
    const ModuleNode* m = stack.back();
    stack.pop_back();
    EMBER_CHECK(m != this) << "Import: importing this " << other->type_key()
                           << " module would create a cycle";
    for (const Module& child : m->imports_) stack.push_back(child.get());
  }
  imports_.push_back(std::move(other));
}

const PackedFunc* ModuleNode::GetFuncFromEnv(const String& name) {
  std::lock_guard<std::mutex> lock(env_mutex_);
  auto it = env_cache_.find(name.str());
  if (it != env_cache_.end()) return it->second.get();
  // This module's own functions are looked up without a reference to it: the cache lives inside
  // the module, so a closure owning the module would keep it alive forever (a cycle).
  PackedFunc pf = GetFunction(name, ObjectPtr<Object>());
  for (size_t i = 0; pf == nullptr && i < imports_.size(); ++i) {
    pf = imports_[i]->GetFunction(name, true);
  }
  if (pf == nullptr) {
    const PackedFunc* global = Registry::Get(name.str());
    EMBER_CHECK(global != nullptr) << "cannot find function \"" << name << "\" in the "
                                   << type_key() << " module, its imports or the global registry";
    pf = *global;
  }
  auto* out = new PackedFunc(std::move(pf));
  env_cache_.emplace(name.str(), std::unique_ptr<PackedFunc>(out));
  return out;
}

PackedFunc Module::GetFunction(const String& name, bool query_imports) const {
  EMBER_CHECK(defined()) << "GetFunction(\"" << name << "\") on a null Module";
  return get()->GetFunction(name, query_imports);
}

void Module::Import(Module other) const {
  EMBER_CHECK(defined()) << "Import into a null Module";
  get()->Import(std::move(other));
}

Module Module::LoadFromFile(const String& file_name, const String& format) {
  std::string fmt = format.str();
  std::string path = file_name.str();
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    EMBER_LOG_FATAL << "cannot load module " << path << ": it is a directory, and a module is one "
                    << "file (lib.so); load an artifact directory (graph.json, lib.so, params.bin) "
                    << "with load_artifact";
  }
  if (fmt.empty()) {
    size_t dot = path.find_last_of('.');
    size_t slash = path.find_last_of('/');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) {
      EMBER_LOG_FATAL << "cannot load module " << path << ": its name has no extension (.so) to "
                      << "choose a loader by; rename it or pass the format";
    }
    fmt = path.substr(dot + 1);
  }
  if (fmt == "dll" || fmt == "dylib" || fmt == "dso") fmt = "so";
  std::string loader = "runtime.module.loadfile_" + fmt;
  const PackedFunc* f = Registry::Get(loader);
  EMBER_CHECK(f != nullptr) << "cannot load module " << path << ": unknown format \"" << fmt
                            << "\" (no global function " << loader << ")";
  TVMRetValue rv = (*f)(path, fmt);
  return rv.As<Module>();
}

EMBER_REGISTER_GLOBAL("runtime.ModuleGetTypeKey").set_body_typed([](Module m) {
  return std::string(m->type_key());
});
EMBER_REGISTER_GLOBAL("runtime.ModuleGetImport").set_body_typed([](Module m, int index) {
  EMBER_CHECK(index >= 0 && static_cast<size_t>(index) < m->imports().size())
      << "ModuleGetImport: index " << index << " out of range (" << m->imports().size()
      << " imports)";
  return m->imports()[static_cast<size_t>(index)];
});
EMBER_REGISTER_GLOBAL("runtime.ModuleImportsSize").set_body_typed([](Module m) {
  return static_cast<int64_t>(m->imports().size());
});
EMBER_REGISTER_GLOBAL("runtime.ModuleSaveToFile")
    .set_body_typed([](Module m, std::string file, std::string format) {
      m->SaveToFile(file, format);
    });
EMBER_REGISTER_GLOBAL("runtime.ModuleLoadFromFile")
    .set_body_typed([](std::string file, std::string format) {
      return Module::LoadFromFile(file, format);
    });

}  // namespace ember::runtime
