/*!
 * \file ember/runtime/c_runtime_api.h
 * \brief The C ABI of the Ember runtime: the calls apps, Python (ctypes) and generated code make.
 *
 * Names, the TVMValue layout and the type codes follow Apache TVM's c_runtime_api.h (v0.8 to
 * v0.17), so that programs and artifacts written against TVM's graph executor work unchanged.
 * Every function returns 0 on success and -1 on failure; TVMGetLastError() then explains.
 * No C++ types appear here and no C++ exception ever crosses these functions.
 */
#ifndef EMBER_RUNTIME_C_RUNTIME_API_H_
#define EMBER_RUNTIME_C_RUNTIME_API_H_

#ifndef TVM_DLL
#define TVM_DLL __attribute__((visibility("default")))
#endif

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*! \brief The TVM release whose ABI this runtime speaks. */
#define TVM_VERSION "0.17.0"
/*! \brief Ember's own version. */
#define EMBER_VERSION "0.1.0"

typedef int64_t tvm_index_t;

/*! \brief Type codes of TVMValue; equal to TVM's so foreign callers agree on the tags. */
typedef enum {
  kTVMArgInt = kDLInt,
  kTVMArgFloat = kDLFloat,
  kTVMOpaqueHandle = 3U,
  kTVMNullptr = 4U,
  kTVMDataType = 5U,
  kDLDevice = 6U,
  kTVMDLTensorHandle = 7U,
  kTVMObjectHandle = 8U,
  kTVMModuleHandle = 9U,
  kTVMPackedFuncHandle = 10U,
  kTVMStr = 11U,
  kTVMBytes = 12U,
  kTVMNDArrayHandle = 13U,
  kTVMObjectRValueRefArg = 14U,
  kTVMArgBool = 15U,
  kTVMExtBegin = 16U,
  kTVMExtEnd = 128U,
} TVMArgTypeCode;

/*! \brief The argument and return value union of every packed call. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

/*! \brief A byte string that may hold zeros (type code kTVMBytes). */
typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef void* TVMRetValueHandle;
typedef void* TVMStreamHandle;
typedef void* TVMObjectHandle;
typedef DLTensor* TVMArrayHandle;

/*! \brief Signature of a C callback that becomes a PackedFunc (TVMFuncCreateFromCFunc). */
typedef int (*TVMPackedCFunc)(TVMValue* args, int* type_codes, int num_args, TVMRetValueHandle ret,
                              void* resource_handle);
/*! \brief Called once when the PackedFunc made from a TVMPackedCFunc is destroyed. */
typedef void (*TVMPackedCFuncFinalizer)(void* resource_handle);

/* ---- errors ---- */
TVM_DLL void TVMAPISetLastError(const char* msg);
TVM_DLL const char* TVMGetLastError(void);

/* ---- modules ---- */
TVM_DLL int TVMModLoadFromFile(const char* file_name, const char* format, TVMModuleHandle* out);
TVM_DLL int TVMModImport(TVMModuleHandle mod, TVMModuleHandle dep);
TVM_DLL int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                              TVMFunctionHandle* out);
TVM_DLL int TVMModFree(TVMModuleHandle mod);

/* ---- packed functions and the global registry ---- */
TVM_DLL int TVMFuncFree(TVMFunctionHandle func);
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);
TVM_DLL int TVMCFuncSetReturn(TVMRetValueHandle ret, TVMValue* value, int* type_code, int num_ret);
TVM_DLL int TVMCbArgToReturn(TVMValue* value, int* code);
TVM_DLL int TVMFuncCreateFromCFunc(TVMPackedCFunc func, void* resource_handle,
                                   TVMPackedCFuncFinalizer fin, TVMFunctionHandle* out);
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);
TVM_DLL int TVMFuncListGlobalNames(int* out_size, const char*** out_array);
TVM_DLL int TVMFuncRemoveGlobal(const char* name);

/* ---- arrays ---- */
TVM_DLL int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                          int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out);
TVM_DLL int TVMArrayFree(TVMArrayHandle handle);
TVM_DLL int TVMArrayCopyFromBytes(TVMArrayHandle handle, void* data, size_t nbytes);
TVM_DLL int TVMArrayCopyToBytes(TVMArrayHandle handle, void* data, size_t nbytes);
TVM_DLL int TVMArrayCopyFromTo(TVMArrayHandle from, TVMArrayHandle to, TVMStreamHandle stream);
TVM_DLL int TVMArrayFromDLPack(DLManagedTensor* from, TVMArrayHandle* out);
TVM_DLL int TVMArrayToDLPack(TVMArrayHandle from, DLManagedTensor** out);
TVM_DLL void TVMDLManagedTensorCallDeleter(DLManagedTensor* dltensor);

/* ---- devices ---- */
TVM_DLL int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                                    DLDataType type_hint, void** out_data);
TVM_DLL int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr);
TVM_DLL int TVMSynchronize(int device_type, int device_id, TVMStreamHandle stream);

/* ---- objects ---- */
TVM_DLL int TVMObjectGetTypeIndex(TVMObjectHandle obj, unsigned* out_tindex);
TVM_DLL int TVMObjectTypeKey2Index(const char* type_key, unsigned* out_tindex);
TVM_DLL int TVMObjectTypeIndex2Key(unsigned tindex, char** out_type_key);
TVM_DLL int TVMObjectRetain(TVMObjectHandle obj);
TVM_DLL int TVMObjectFree(TVMObjectHandle obj);
TVM_DLL int TVMByteArrayFree(TVMByteArray* arr);

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // EMBER_RUNTIME_C_RUNTIME_API_H_
