/*!
 * \file ember/runtime/c_backend_api.h
 * \brief The C calls that generated kernels (lib.so) make into the runtime.
 *
 * Follows Apache TVM's c_backend_api.h, so kernels compiled by emberc and by TVM both run here.
 */
#ifndef EMBER_RUNTIME_C_BACKEND_API_H_
#define EMBER_RUNTIME_C_BACKEND_API_H_

#include <ember/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*!
 * \brief The signature of every kernel exported from lib.so: one packed function per fused op.
 * \return 0 on success, -1 after calling TVMAPISetLastError.
 */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/*! \brief Looks up \p func_name in the module behind \p mod_node and its imports. */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out);

/*! \brief Called by static initialisers of a --system-lib archive to publish one symbol. */
TVM_DLL int TVMBackendRegisterSystemLibSymbol(const char* name, void* ptr);

/*! \brief Scratch memory for a kernel, from a per-thread pool; freed in reverse order. */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

/*! \brief What a parallel task sees of its launch. */
typedef struct {
  void* sync_handle; /*!< opaque; used by TVMBackendParallelBarrier */
  int32_t num_task;  /*!< how many tasks run this launch */
} TVMParallelGroupEnv;

/*! \brief The body of a parallel launch, run once per task id in [0, num_task). */
typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/*!
 * \brief Runs \p flambda on the thread pool; num_task 0 means one task per worker.
 * \return 0 when every task returned 0, else -1.
 */
TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);

/*! \brief Waits until every task of the current launch reached this barrier. */
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);

/*! \brief Runs f(cdata) once per *handle, thread-safely (for lazily initialised globals). */
TVM_DLL int TVMBackendRunOnce(void** handle, int (*f)(void*), void* cdata, int nbytes);

#ifdef __cplusplus
}  // extern "C"
#endif
#endif  // EMBER_RUNTIME_C_BACKEND_API_H_
