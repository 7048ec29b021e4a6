// Function lookup, runtime hooks and blob unpacking for library modules. The blob layout follows
// TVM's export_library (v0.8+), read with ByteReader:
//   u64 payload_size, then the payload:
//   u64 module_count, then per module a type key string and:
//     "_lib"          the library itself (no bytes)
//     "_import_tree"  vector<u64> row_ptr, vector<u64> child_indices (CSR import edges)
//     anything else   that module's bytes, read by global runtime.module.loadbinary_<key>
#include "library_module.h"

#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/registry.h>

#include <cstring>
#include <string>
#include <vector>

namespace ember::runtime {
namespace {

// Wraps a kernel as a PackedFunc; the closure keeps `owner` (the library) alive.
PackedFunc WrapPackedCFunc(TVMBackendPackedCFunc f, const ObjectPtr<Object>& owner,
                           const std::string& name) {
  return PackedFunc([f, owner, name](TVMArgs args, TVMRetValue* rv) {
    TVMValue ret_value;
    ret_value.v_handle = nullptr;
    int ret_code = kTVMNullptr;
    int rc = f(const_cast<TVMValue*>(args.values), const_cast<int*>(args.type_codes), args.num_args,
               &ret_value, &ret_code, nullptr);
    if (EMBER_UNLIKELY(rc != 0)) {
      const char* msg = TVMGetLastError();
      EMBER_LOG_FATAL << ((msg != nullptr && msg[0] != '\0')
                              ? std::string(msg)
                              : name + " failed (returned " + std::to_string(rc) +
                                    ") without setting an error message");
    }
    if (ret_code != kTVMNullptr) *rv = TVMRetValue::MoveFromCHost(ret_value, ret_code);
  });
}

// The runtime hooks TVM-built libraries call through writable pointers instead of direct calls.
// Weak: the thread pool and workspace live in files other engineers own; a missing one is left
// unfilled rather than breaking the link.
#pragma weak TVMBackendAllocWorkspace
#pragma weak TVMBackendFreeWorkspace
#pragma weak TVMBackendParallelLaunch
#pragma weak TVMBackendParallelBarrier

template <typename F>
void SetHook(const LibraryModuleNode& lib, const char* name, F* fn) {
  if (fn == nullptr) return;
  if (void* slot = lib.GetSymbol(name)) *static_cast<void**>(slot) = reinterpret_cast<void*>(fn);
}

void InitLibraryContext(LibraryModuleNode* lib) {
  if (void* ctx = lib->GetSymbol(symbol::kModuleCtx)) {
    // Kernels hand this back to TVMBackendGetFuncFromEnv, which reads it as an Object*.
    *static_cast<void**>(ctx) = static_cast<Object*>(lib);
  }
  SetHook(*lib, "__TVMFuncCall", &TVMFuncCall);
  SetHook(*lib, "__TVMAPISetLastError", &TVMAPISetLastError);
  SetHook(*lib, "__TVMBackendGetFuncFromEnv", &TVMBackendGetFuncFromEnv);
  SetHook(*lib, "__TVMBackendAllocWorkspace", &TVMBackendAllocWorkspace);
  SetHook(*lib, "__TVMBackendFreeWorkspace", &TVMBackendFreeWorkspace);
  SetHook(*lib, "__TVMBackendParallelLaunch", &TVMBackendParallelLaunch);
  SetHook(*lib, "__TVMBackendParallelBarrier", &TVMBackendParallelBarrier);
}

Module ProcessLibraryBlob(const char* blob, const Module& lib, const std::string& source) {
  std::string what = source + " (" + symbol::kDevModuleBlob + ")";
  uint64_t nbytes = 0;
  std::memcpy(&nbytes, blob, sizeof(nbytes));
  ByteReader reader(blob + sizeof(nbytes), static_cast<size_t>(nbytes), what);
  uint64_t count = reader.Read<uint64_t>("module count");
  EMBER_CHECK_LE(count, reader.remaining() / sizeof(uint64_t))
      << what << ": module count " << count << " is larger than the blob";
  std::vector<Module> modules;
  std::vector<uint64_t> row_ptr, child_indices;
  bool has_tree = false;
  for (uint64_t i = 0; i < count; ++i) {
    std::string key = reader.ReadString("module type key");
    if (key == "_lib") {
      modules.push_back(lib);
    } else if (key == "_import_tree") {
      row_ptr = reader.ReadVector<uint64_t>("import tree row pointers");
      child_indices = reader.ReadVector<uint64_t>("import tree children");
      has_tree = true;
    } else {
      std::string loader = "runtime.module.loadbinary_" + key;
      const PackedFunc* f = Registry::Get(loader);
      EMBER_CHECK(f != nullptr) << what << ": embeds a module of type \"" << key
                                << "\" but no loader is registered (" << loader << ")";
      TVMRetValue rv = (*f)(static_cast<void*>(&reader));
      modules.push_back(rv.As<Module>());
    }
  }
  if (!has_tree) {
    for (const Module& m : modules) {
      if (!m.same_as(lib)) lib.Import(m);
    }
    return lib;
  }
  EMBER_CHECK_EQ(row_ptr.size(), modules.size() + 1)
      << what << ": import tree does not match the module count";
  for (size_t i = 0; i < modules.size(); ++i) {
    EMBER_CHECK(row_ptr[i] <= row_ptr[i + 1] && row_ptr[i + 1] <= child_indices.size())
        << what << ": import tree row " << i << " is out of range";
    for (uint64_t j = row_ptr[i]; j < row_ptr[i + 1]; ++j) {
      uint64_t child = child_indices[j];
      EMBER_CHECK(child < modules.size() && child != i)
          << what << ": import tree names module " << child << " of " << modules.size();
      modules[i].Import(modules[child]);
    }
  }
  EMBER_CHECK(!modules.empty()) << what << ": blob holds no modules";
  return modules[0];
}

}  // namespace

PackedFunc LibraryModuleNode::GetFunction(const String& name,
                                          const ObjectPtr<Object>& sptr_to_self) {
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

Module InitLibraryModule(ObjectPtr<LibraryModuleNode> node, const std::string& source) {
  LibraryModuleNode* raw = node.get();
  InitLibraryContext(raw);
  Module lib(std::move(node));
  if (const char* blob = static_cast<const char*>(raw->GetSymbol(symbol::kDevModuleBlob))) {
    return ProcessLibraryBlob(blob, lib, source);
  }
  return lib;
}

}  // namespace ember::runtime
