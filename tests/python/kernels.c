/* Tiny kernel library for the Python tests: TVM-style packed functions over DLTensor arguments. */
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/c_runtime_api.h>

void* __tvm_module_ctx = 0;

static int64_t NumElements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

static int CheckTensors(const char* name, TVMValue* args, int* codes, int num_args, int want) {
  if (num_args != want) {
    TVMAPISetLastError(name);
    return -1;
  }
  for (int i = 0; i < num_args; ++i) {
    if (codes[i] != kTVMDLTensorHandle && codes[i] != kTVMNDArrayHandle) {
      TVMAPISetLastError(name);
      return -1;
    }
  }
  return 0;
}

/* out = a + b (float32, same number of elements). */
int add_f32(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code, void* res) {
  (void)ret, (void)ret_code, (void)res;
  if (CheckTensors("add_f32: expected 3 tensor arguments", args, codes, num_args, 3)) return -1;
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  const DLTensor* b = (const DLTensor*)args[1].v_handle;
  DLTensor* out = (DLTensor*)args[2].v_handle;
  const float* pa = (const float*)a->data;
  const float* pb = (const float*)b->data;
  float* po = (float*)out->data;
  for (int64_t i = 0, n = NumElements(out); i < n; ++i) po[i] = pa[i] + pb[i];
  return 0;
}

/* out = max(a, 0). */
int relu_f32(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code, void* res) {
  (void)ret, (void)ret_code, (void)res;
  if (CheckTensors("relu_f32: expected 2 tensor arguments", args, codes, num_args, 2)) return -1;
  const DLTensor* a = (const DLTensor*)args[0].v_handle;
  DLTensor* out = (DLTensor*)args[1].v_handle;
  const float* pa = (const float*)a->data;
  float* po = (float*)out->data;
  for (int64_t i = 0, n = NumElements(out); i < n; ++i) po[i] = pa[i] > 0.0f ? pa[i] : 0.0f;
  return 0;
}

/* Returns its int argument times 2 (checks scalar packing through a module function). */
int twice_int(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code, void* res) {
  (void)res;
  if (num_args != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("twice_int: expected one int argument");
    return -1;
  }
  ret->v_int64 = args[0].v_int64 * 2;
  *ret_code = kTVMArgInt;
  return 0;
}

/* Always fails with a message, to test error propagation from a kernel. */
int always_fails(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                 void* res) {
  (void)args, (void)codes, (void)num_args, (void)ret, (void)ret_code, (void)res;
  TVMAPISetLastError("always_fails: this kernel refuses to run (test of error propagation)");
  return -1;
}

/* Does nothing: the benchmark's C-side no-op (bench/bench_python_ffi.py). */
int nop(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code, void* res) {
  (void)args, (void)codes, (void)num_args, (void)ret, (void)ret_code, (void)res;
  return 0;
}
