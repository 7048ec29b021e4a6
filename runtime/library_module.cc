// Kernel wrapping and blob unpacking for library modules. The blob layout follows TVM's
// export_library (v0.8+), read with ByteReader:
//   u64 payload_size, then the payload:
//   u64 module_count, then per module a type key string and:
//     "_lib"          the library itself (no bytes)
//     "_import_tree"  vector<u64> row_ptr, vector<u64> child_indices (CSR import edges)
//     anything else   that module's bytes, read by global runtime.module.loadbinary_<key>
#include "library_module.h"

#include <ember/runtime/registry.h>

#include <cstring>
#include <string>
#include <vector>

namespace ember::runtime {

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

namespace {
// The runtime hooks TVM-built libraries call through writable pointers instead of direct calls.
// Weak: the thread pool and workspace live in files other engineers own; a missing one is left
// unfilled rather than breaking the link.
#pragma weak TVMBackendAllocWorkspace
#pragma weak TVMBackendFreeWorkspace
#pragma weak TVMBackendParallelLaunch
#pragma weak TVMBackendParallelBarrier

template <typename F>
void SetHook(const std::function<void*(const char*)>& lookup, const char* name, F* fn) {
  if (fn == nullptr) return;
  if (void* slot = lookup(name)) *static_cast<void**>(slot) = reinterpret_cast<void*>(fn);
}
}  // namespace

void InitLibraryContext(const std::function<void*(const char*)>& lookup, ModuleNode* module) {
  if (void* ctx = lookup(symbol::kModuleCtx)) {
    // Kernels hand this back to TVMBackendGetFuncFromEnv, which reads it as an Object*.
    *static_cast<void**>(ctx) = static_cast<Object*>(module);
  }
  SetHook(lookup, "__TVMFuncCall", &TVMFuncCall);
  SetHook(lookup, "__TVMAPISetLastError", &TVMAPISetLastError);
  SetHook(lookup, "__TVMBackendGetFuncFromEnv", &TVMBackendGetFuncFromEnv);
  SetHook(lookup, "__TVMBackendAllocWorkspace", &TVMBackendAllocWorkspace);
  SetHook(lookup, "__TVMBackendFreeWorkspace", &TVMBackendFreeWorkspace);
  SetHook(lookup, "__TVMBackendParallelLaunch", &TVMBackendParallelLaunch);
  SetHook(lookup, "__TVMBackendParallelBarrier", &TVMBackendParallelBarrier);
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

}  // namespace ember::runtime
