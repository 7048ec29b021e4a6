// The C ABI over the C++ runtime. Handles are raw Object* (NDArrays: the DLTensor* inside their
// container); a handle returned to C owns one reference, released by the matching *Free call.
// Every entry point catches everything: no exception reaches a C caller.
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/device_api.h>
#include <ember/runtime/module.h>
#include <ember/runtime/ndarray.h>
#include <ember/runtime/packed_func.h>
#include <ember/runtime/registry.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "minimal.h"

using namespace ember::runtime;  // NOLINT(build/namespaces): this file is the C boundary.

namespace {

// Per-thread storage behind pointers the C API returns (strings, name lists).
struct ApiThreadStore {
  std::string ret_str;
  TVMByteArray ret_bytes{nullptr, 0};
  std::vector<std::string> names;
  std::vector<const char*> name_ptrs;
};

ApiThreadStore* ThreadStore() {
  thread_local ApiThreadStore store;
  return &store;
}

inline Object* AsObject(void* handle) { return static_cast<Object*>(handle); }

inline const PackedFuncObj* AsFunc(TVMFunctionHandle handle) {
  return static_cast<const PackedFuncObj*>(AsObject(handle));
}

inline ModuleNode* AsModule(TVMModuleHandle handle) {
  Object* obj = AsObject(handle);
  EMBER_CHECK(obj != nullptr && obj->IsInstance<ModuleNode>())
      << "handle is not a module (type " << (obj ? obj->GetTypeKey() : std::string("null")) << ")";
  return static_cast<ModuleNode*>(obj);
}

// Gives C the reference an ObjectRef holds.
void* ReleaseToC(ObjectRef ref) { return static_cast<void*>(ObjectRefInternal::Release(&ref)); }

// A PackedFunc around a C callback; the finalizer runs when the last reference goes.
class CFuncClosure {
 public:
  CFuncClosure(TVMPackedCFunc func, void* resource, TVMPackedCFuncFinalizer fin)
      : func_(func), resource_(resource), fin_(fin) {}
  CFuncClosure(CFuncClosure&& other) noexcept
      : func_(other.func_), resource_(other.resource_), fin_(other.fin_) {
    other.fin_ = nullptr;
  }
  CFuncClosure(const CFuncClosure&) = delete;
  CFuncClosure& operator=(const CFuncClosure&) = delete;
  CFuncClosure& operator=(CFuncClosure&&) = delete;
  ~CFuncClosure() {
    if (fin_ != nullptr) fin_(resource_);
  }

  void operator()(TVMArgs args, TVMRetValue* rv) const {
    int rc = func_(const_cast<TVMValue*>(args.values), const_cast<int*>(args.type_codes),
                   args.num_args, rv, resource_);
    if (rc != 0) {
      const char* msg = TVMGetLastError();
      EMBER_LOG_FATAL << ((msg != nullptr && msg[0] != '\0')
                              ? msg
                              : "a C callback failed without setting an error message");
    }
  }

 private:
  TVMPackedCFunc func_;
  void* resource_;
  TVMPackedCFuncFinalizer fin_;
};

void CheckHostCopy(const DLTensor* t, size_t nbytes, const char* what) {
  EMBER_CHECK(t != nullptr) << what << ": null array handle";
  size_t expected = GetDataSize(*t);
  EMBER_CHECK_EQ(nbytes, expected) << what << ": byte size mismatch";
  if (t->strides != nullptr) {
    int64_t stride = 1;
    for (int i = t->ndim - 1; i >= 0; --i) {
      EMBER_CHECK(t->shape[i] == 1 || t->strides[i] == stride) << what << ": array is not compact";
      stride *= t->shape[i];
    }
  }
}

}  // namespace

// ---- modules ----

int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(file_name != nullptr && out != nullptr) << "TVMModLoadFromFile: null argument";
  *out = ReleaseToC(Module::LoadFromFile(file_name, format ? format : ""));
  EMBER_API_END();
}

int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep) {
  EMBER_API_BEGIN();
  ModuleNode* node = AsModule(mod);
  AsModule(dep);
  node->Import(Module(ObjectPtr<Object>(AsObject(dep))));
  EMBER_API_END();
}

int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                      TVMFunctionHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(func_name != nullptr && out != nullptr) << "TVMModGetFunction: null argument";
  PackedFunc pf = AsModule(mod)->GetFunction(func_name, query_imports != 0);
  *out = pf != nullptr ? ReleaseToC(pf) : nullptr;
  EMBER_API_END();
}

int TVMModFree(TVMModuleHandle mod) {
  EMBER_API_BEGIN();
  if (mod != nullptr) AsObject(mod)->DecRef();
  EMBER_API_END();
}

// ---- packed functions and the registry ----

int TVMFuncFree(TVMFunctionHandle func) {
  EMBER_API_BEGIN();
  if (func != nullptr) AsObject(func)->DecRef();
  EMBER_API_END();
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                TVMValue* ret_val, int* ret_type_code) {
  EMBER_API_BEGIN();
  EMBER_CHECK(func != nullptr) << "TVMFuncCall: null function handle";
  TVMRetValue rv;
  AsFunc(func)->CallPacked(TVMArgs(arg_values, type_codes, num_args), &rv);
  const int code = rv.type_code();
  if (code == kTVMStr || code == kTVMBytes || code == kTVMDataType) {
    // Text leaves through per-thread storage valid until this thread's next call.
    ApiThreadStore* store = ThreadStore();
    store->ret_str = rv.As<std::string>();
    if (code == kTVMBytes) {
      store->ret_bytes = TVMByteArray{store->ret_str.data(), store->ret_str.size()};
      ret_val->v_handle = &store->ret_bytes;
      *ret_type_code = kTVMBytes;
    } else {
      ret_val->v_str = store->ret_str.c_str();
      *ret_type_code = kTVMStr;
    }
  } else {
    rv.MoveToCHost(ret_val, ret_type_code);
  }
  EMBER_API_END();
}

int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret) {
  EMBER_API_BEGIN();
  EMBER_CHECK_EQ(num_ret, 1) << "TVMCFuncSetReturn: only one return value is supported";
  EMBER_CHECK(ret != nullptr && value != nullptr && type_code != nullptr)
      << "TVMCFuncSetReturn: null argument";
  *static_cast<TVMRetValue*>(ret) = TVMArgValue(value[0], type_code[0]);
  EMBER_API_END();
}

int TVMCbArgToReturn(TVMValue* value, int* code) {
  EMBER_API_BEGIN();
  EMBER_CHECK(value != nullptr && code != nullptr) << "TVMCbArgToReturn: null argument";
  // A callback's object arguments are borrowed; this gives the callee a reference it owns.
  if (*code == kTVMObjectHandle || *code == kTVMModuleHandle || *code == kTVMPackedFuncHandle ||
      *code == kTVMNDArrayHandle || *code == kTVMObjectRValueRefArg) {
    TVMRetValue rv;
    rv = TVMArgValue(*value, *code);
    rv.MoveToCHost(value, code);
  }
  EMBER_API_END();
}

int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle, TVMPackedCFuncFinalizer fin,
                           TVMFunctionHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(func != nullptr && out != nullptr) << "TVMFuncCreateFromCFunc: null argument";
  *out = ReleaseToC(PackedFunc(CFuncClosure(func, resource_handle, fin)));
  EMBER_API_END();
}

int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  EMBER_API_BEGIN();
  EMBER_CHECK(name != nullptr && f != nullptr) << "TVMFuncRegisterGlobal: null argument";
  EMBER_CHECK(AsObject(f)->IsInstance<PackedFuncObj>())
      << "TVMFuncRegisterGlobal(\"" << name << "\"): handle is not a function";
  Registry::Register(name, override != 0).set_body(PackedFunc(ObjectPtr<Object>(AsObject(f))));
  EMBER_API_END();
}

int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(name != nullptr && out != nullptr) << "TVMFuncGetGlobal: null argument";
  const PackedFunc* f = Registry::Get(name);
  *out = f != nullptr ? ReleaseToC(*f) : nullptr;
  EMBER_API_END();
}

int TVMFuncListGlobalNames(int* out_size, const char*** out_array) {
  EMBER_API_BEGIN();
  EMBER_CHECK(out_size != nullptr && out_array != nullptr)
      << "TVMFuncListGlobalNames: null argument";
#if EMBER_RUNTIME_MINIMAL
  ThrowNotInMinimalRuntime("TVMFuncListGlobalNames (registry listing)");
#else
  ApiThreadStore* store = ThreadStore();
  store->names = Registry::ListNames();
  store->name_ptrs.clear();
  for (const std::string& n : store->names) store->name_ptrs.push_back(n.c_str());
  *out_size = static_cast<int>(store->name_ptrs.size());
  *out_array = store->name_ptrs.data();
#endif
  EMBER_API_END();
}

int TVMFuncRemoveGlobal(const char* name) {
  EMBER_API_BEGIN();
  EMBER_CHECK(name != nullptr) << "TVMFuncRemoveGlobal: null name";
  EMBER_CHECK(Registry::Remove(name))
      << "TVMFuncRemoveGlobal: no global function named \"" << name << "\"";
  EMBER_API_END();
}

// ---- arrays ----

int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                  int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(out != nullptr) << "TVMArrayAlloc: null output";
  EMBER_CHECK(ndim >= 0 && (ndim == 0 || shape != nullptr))
      << "TVMArrayAlloc: invalid ndim " << ndim;
  EMBER_CHECK(dtype_code >= 0 && dtype_code <= 255 && dtype_bits > 0 && dtype_bits <= 255 &&
              dtype_lanes > 0 && dtype_lanes <= 65535)
      << "TVMArrayAlloc: invalid dtype (code " << dtype_code << ", bits " << dtype_bits
      << ", lanes " << dtype_lanes << ")";
  DLDataType dtype{static_cast<uint8_t>(dtype_code), static_cast<uint8_t>(dtype_bits),
                   static_cast<uint16_t>(dtype_lanes)};
  DLDevice dev{static_cast<DLDeviceType>(device_type), device_id};
  NDArray arr = NDArray::Empty(ShapeTuple(shape, shape + ndim), dtype, dev);
  *out = NDArray::FFIGetHandle(arr);
  ObjectRefInternal::Release(&arr);
  EMBER_API_END();
}

int TVMArrayFree(TVMArrayHandle handle) {
  EMBER_API_BEGIN();
  if (handle != nullptr) static_cast<Object*>(NDArray::ContainerFromHandle(handle))->DecRef();
  EMBER_API_END();
}

int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes) {
  EMBER_API_BEGIN();
  CheckHostCopy(handle, nbytes, "TVMArrayCopyFromBytes");
  DeviceAPI::Get(handle->device)
      ->CopyDataFromTo(data, 0, handle->data, static_cast<size_t>(handle->byte_offset), nbytes,
                       DLDevice{kDLCPU, 0}, handle->device, nullptr);
  EMBER_API_END();
}

int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes) {
  EMBER_API_BEGIN();
  CheckHostCopy(handle, nbytes, "TVMArrayCopyToBytes");
  DeviceAPI::Get(handle->device)
      ->CopyDataFromTo(handle->data, static_cast<size_t>(handle->byte_offset), data, 0, nbytes,
                       handle->device, DLDevice{kDLCPU, 0}, nullptr);
  EMBER_API_END();
}

int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle stream) {
  EMBER_API_BEGIN();
  NDArray::CopyFromTo(from, to, stream);
  EMBER_API_END();
}

int TVMArrayFromDLPack(DLManagedTensor* from, TVMArrayHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(out != nullptr) << "TVMArrayFromDLPack: null output";
#if EMBER_RUNTIME_MINIMAL
  (void)from;
  ThrowNotInMinimalRuntime("TVMArrayFromDLPack (DLPack import)");
#else
  NDArray arr = NDArray::FromDLPack(from);
  *out = NDArray::FFIGetHandle(arr);
  ObjectRefInternal::Release(&arr);
#endif
  EMBER_API_END();
}

int TVMArrayToDLPack(TVMArrayHandle from, DLManagedTensor** out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(from != nullptr && out != nullptr) << "TVMArrayToDLPack: null argument";
  *out = NDArray::FromFFIHandle(from).ToDLPack();
  EMBER_API_END();
}

void TVMDLManagedTensorCallDeleter(DLManagedTensor* dltensor) {
  if (dltensor != nullptr && dltensor->deleter != nullptr) dltensor->deleter(dltensor);
}

// ---- devices ----

int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment, DLDataType type_hint,
                            void** out_data) {
  EMBER_API_BEGIN();
  EMBER_CHECK(out_data != nullptr) << "TVMDeviceAllocDataSpace: null output";
  *out_data = DeviceAPI::Get(dev)->AllocDataSpace(dev, nbytes, alignment, type_hint);
  EMBER_API_END();
}

int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr) {
  EMBER_API_BEGIN();
  DeviceAPI::Get(dev)->FreeDataSpace(dev, ptr);
  EMBER_API_END();
}

int TVMSynchronize(int device_type, int device_id, TVMStreamHandle stream) {
  EMBER_API_BEGIN();
  DLDevice dev{static_cast<DLDeviceType>(device_type), device_id};
  DeviceAPI::Get(dev)->StreamSync(dev, stream);
  EMBER_API_END();
}

// ---- objects ----

int TVMObjectGetTypeIndex(TVMObjectHandle obj, unsigned* out_tindex) {
  EMBER_API_BEGIN();
  EMBER_CHECK(obj != nullptr && out_tindex != nullptr) << "TVMObjectGetTypeIndex: null argument";
  *out_tindex = AsObject(obj)->type_index();
  EMBER_API_END();
}

int TVMObjectTypeKey2Index(const char* type_key, unsigned* out_tindex) {
  EMBER_API_BEGIN();
  EMBER_CHECK(type_key != nullptr && out_tindex != nullptr)
      << "TVMObjectTypeKey2Index: null argument";
  *out_tindex = Object::TypeKey2Index(type_key);
  EMBER_API_END();
}

int TVMObjectTypeIndex2Key(unsigned tindex, char** out_type_key) {
  EMBER_API_BEGIN();
  EMBER_CHECK(out_type_key != nullptr) << "TVMObjectTypeIndex2Key: null output";
  std::string key = Object::TypeIndex2Key(tindex);
  // The caller frees this with free(), as with TVM.
  char* copy = static_cast<char*>(std::malloc(key.size() + 1));
  EMBER_CHECK(copy != nullptr) << "TVMObjectTypeIndex2Key: out of memory";
  std::memcpy(copy, key.c_str(), key.size() + 1);
  *out_type_key = copy;
  EMBER_API_END();
}

int TVMObjectRetain(TVMObjectHandle obj) {
  EMBER_API_BEGIN();
  if (obj != nullptr) AsObject(obj)->IncRef();
  EMBER_API_END();
}

int TVMObjectFree(TVMObjectHandle obj) {
  EMBER_API_BEGIN();
  if (obj != nullptr) AsObject(obj)->DecRef();
  EMBER_API_END();
}

int TVMByteArrayFree(TVMByteArray* arr) {
  EMBER_API_BEGIN();
  // The bytes TVMFuncCall returns live in per-thread storage and are not freed.
  if (arr != nullptr && arr != &ThreadStore()->ret_bytes) delete arr;
  EMBER_API_END();
}

// ---- backend ----

int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out) {
  EMBER_API_BEGIN();
  EMBER_CHECK(mod_node != nullptr) << "TVMBackendGetFuncFromEnv(\"" << (func_name ? func_name : "")
                                   << "\"): the library's __tvm_module_ctx was never set";
  EMBER_CHECK(func_name != nullptr && out != nullptr) << "TVMBackendGetFuncFromEnv: null argument";
  const PackedFunc* f = AsModule(mod_node)->GetFuncFromEnv(func_name);
  // Borrowed: the module's cache owns it for the module's lifetime.
  *out = const_cast<Object*>(static_cast<const Object*>(f->get()));
  EMBER_API_END();
}
