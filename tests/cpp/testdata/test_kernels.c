/*
 * Test kernels in plain C with the TVMBackendPackedCFunc signature, standing in for a compiled
 * lib.so. Built twice by CMake: as a shared library (loaded through the DSO module) and, with
 * EMBER_TEST_SYSTEM_LIB defined, as a static object that registers its kernels with
 * TVMBackendRegisterSystemLibSymbol at static-initialisation time (the --system-lib shape).
 *
 *   add(a, b, out)     out = a + b     float32, any shape, all three the same shape
 *   relu(x, out)       out = max(x, 0) float32, any shape
 *   dense(x, w, y)     y[N, M] = x[N, K] * w[M, K]^T
 *
 * Every kernel checks its arguments and reports a mismatch through TVMAPISetLastError.
 */
#include <ember/runtime/c_backend_api.h>
#include <stdint.h>
#include <stdio.h>

#ifdef EMBER_TEST_SYSTEM_LIB
#define KERNEL_EXPORT static
#else
#define KERNEL_EXPORT __attribute__((visibility("default")))
#endif

/* Filled by the loader; the "call_env" kernel reads it to reach TVMBackendGetFuncFromEnv. */
#ifdef EMBER_TEST_SYSTEM_LIB
static void* __tvm_module_ctx = NULL;
#else
__attribute__((visibility("default"))) void* __tvm_module_ctx = NULL;
#endif

static int Fail(const char* kernel, const char* what) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s: %s", kernel, what);
  TVMAPISetLastError(buf);
  return -1;
}

/* Checks that argument i is a float32 tensor; fills *out. */
static int GetFloatTensor(const char* kernel, TVMValue* args, int* codes, int i, DLTensor** out) {
  char buf[160];
  if (codes[i] != kTVMDLTensorHandle && codes[i] != kTVMNDArrayHandle) {
    snprintf(buf, sizeof(buf), "argument %d expected a tensor, got type code %d", i, codes[i]);
    return Fail(kernel, buf);
  }
  DLTensor* t = (DLTensor*)args[i].v_handle;
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1) {
    snprintf(buf, sizeof(buf), "argument %d expected float32", i);
    return Fail(kernel, buf);
  }
  *out = t;
  return 0;
}

static int64_t NumElements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static int SameShape(const DLTensor* a, const DLTensor* b) {
  if (a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; ++i) {
    if (a->shape[i] != b->shape[i]) return 0;
  }
  return 1;
}

static float* Data(const DLTensor* t) { return (float*)((char*)t->data + t->byte_offset); }

KERNEL_EXPORT int add(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                      void* resource) {
  (void)ret;
  (void)ret_code;
  (void)resource;
  DLTensor *a, *b, *out;
  if (num_args != 3) return Fail("add", "expected 3 arguments (a, b, out)");
  if (GetFloatTensor("add", args, codes, 0, &a) || GetFloatTensor("add", args, codes, 1, &b) ||
      GetFloatTensor("add", args, codes, 2, &out)) {
    return -1;
  }
  if (!SameShape(a, b) || !SameShape(a, out)) return Fail("add", "shape mismatch");
  int64_t n = NumElements(a);
  const float* pa = Data(a);
  const float* pb = Data(b);
  float* po = Data(out);
  for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  return 0;
}

KERNEL_EXPORT int relu(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                       void* resource) {
  (void)ret;
  (void)ret_code;
  (void)resource;
  DLTensor *x, *out;
  if (num_args != 2) return Fail("relu", "expected 2 arguments (x, out)");
  if (GetFloatTensor("relu", args, codes, 0, &x) || GetFloatTensor("relu", args, codes, 1, &out)) {
    return -1;
  }
  if (!SameShape(x, out)) return Fail("relu", "shape mismatch");
  int64_t n = NumElements(x);
  const float* px = Data(x);
  float* po = Data(out);
  for (int64_t i = 0; i < n; ++i) po[i] = px[i] > 0.0f ? px[i] : 0.0f;
  return 0;
}

KERNEL_EXPORT int dense(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                        void* resource) {
  (void)ret;
  (void)ret_code;
  (void)resource;
  DLTensor *x, *w, *y;
  if (num_args != 3) return Fail("dense", "expected 3 arguments (x, w, y)");
  if (GetFloatTensor("dense", args, codes, 0, &x) || GetFloatTensor("dense", args, codes, 1, &w) ||
      GetFloatTensor("dense", args, codes, 2, &y)) {
    return -1;
  }
  if (x->ndim != 2 || w->ndim != 2 || y->ndim != 2) return Fail("dense", "expected 2-D tensors");
  int64_t n = x->shape[0], k = x->shape[1], m = w->shape[0];
  if (w->shape[1] != k || y->shape[0] != n || y->shape[1] != m) {
    return Fail("dense", "shape mismatch: need x[N,K], w[M,K], y[N,M]");
  }
  const float* px = Data(x);
  const float* pw = Data(w);
  float* py = Data(y);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      float acc = 0.0f;
      for (int64_t t = 0; t < k; ++t) acc += px[i * k + t] * pw[j * k + t];
      py[i * m + j] = acc;
    }
  }
  return 0;
}

/* Returns args[0] + 1 as an int: exercises return values through the ABI. */
KERNEL_EXPORT int add_one(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                          void* resource) {
  (void)resource;
  if (num_args != 1 || codes[0] != kTVMArgInt) return Fail("add_one", "expected one int");
  ret[0].v_int64 = args[0].v_int64 + 1;
  *ret_code = kTVMArgInt;
  return 0;
}

/* Calls the function named by args[0] (found through the module environment) with args[1]. */
KERNEL_EXPORT int call_env(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                           void* resource) {
  (void)resource;
  if (num_args != 2 || codes[0] != kTVMStr) return Fail("call_env", "expected (name, value)");
  TVMFunctionHandle f = NULL;
  if (TVMBackendGetFuncFromEnv(__tvm_module_ctx, args[0].v_str, &f) != 0) return -1;
  return TVMFuncCall(f, args + 1, codes + 1, 1, ret, ret_code);
}

#ifdef EMBER_TEST_SYSTEM_LIB
/* Char array, as TVM's codegen emits __tvm_main__. */
static const char tvm_main_name[] = "add";

__attribute__((constructor)) static void RegisterTestKernels(void) {
  TVMBackendRegisterSystemLibSymbol("add", (void*)&add);
  TVMBackendRegisterSystemLibSymbol("relu", (void*)&relu);
  TVMBackendRegisterSystemLibSymbol("dense", (void*)&dense);
  TVMBackendRegisterSystemLibSymbol("add_one", (void*)&add_one);
  TVMBackendRegisterSystemLibSymbol("call_env", (void*)&call_env);
  TVMBackendRegisterSystemLibSymbol("__tvm_module_ctx", (void*)&__tvm_module_ctx);
  TVMBackendRegisterSystemLibSymbol("__tvm_main__", (void*)tvm_main_name);
}
#else
__attribute__((visibility("default"))) const char __tvm_main__[] = "add";
#endif

#ifdef EMBER_TEST_WITH_BLOB
#include <string.h>
/*
 * An embedded module blob, as `__tvm_dev_mblob` carries the graph and params of a single-file
 * artifact: u64 payload size, then u64 module count and per module a type key; here
 *   "test_blob" (its bytes: the string "hello"), "_lib" (this library), "_import_tree"
 * with rows [0, 1, 1] and children [1]: module 0 (test_blob) imports module 1 (the library).
 * Built by a constructor, which runs during dlopen before the loader reads the symbol.
 */
__attribute__((visibility("default"))) char __tvm_dev_mblob[256];

static char* PutU64(char* p, uint64_t v) {
  memcpy(p, &v, 8);
  return p + 8;
}
static char* PutStr(char* p, const char* s) {
  uint64_t n = strlen(s);
  p = PutU64(p, n);
  memcpy(p, s, n);
  return p + n;
}

__attribute__((constructor)) static void BuildBlob(void) {
  char* p = __tvm_dev_mblob + 8;
  p = PutU64(p, 3);
  p = PutStr(p, "test_blob");
  p = PutStr(p, "hello");
  p = PutStr(p, "_lib");
  p = PutStr(p, "_import_tree");
  p = PutU64(p, 3);
  p = PutU64(p, 0);
  p = PutU64(p, 1);
  p = PutU64(p, 1);
  p = PutU64(p, 1);
  p = PutU64(p, 1);
  PutU64(__tvm_dev_mblob, (uint64_t)(p - (__tvm_dev_mblob + 8)));
}
#endif
