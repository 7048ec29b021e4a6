/*
 * Kernels the graph executor tests need beyond tests/cpp/testdata/test_kernels.c (add, relu,
 * dense); both files are linked into one test kernel library.
 *
 *   split2(x, a, b)   a = first half of x, b = second half   float32, any shapes (flat halves)
 *   fail(...)         always fails with "fail: deliberate kernel failure"
 *   nop(...)          does nothing; the run() overhead benchmark chains 100 of these
 */
#include <ember/runtime/c_backend_api.h>
#include <stdint.h>
#include <string.h>

#define GRAPH_KERNEL __attribute__((visibility("default")))

static int64_t Elements(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

GRAPH_KERNEL int split2(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                        void* resource) {
  (void)ret;
  (void)ret_code;
  (void)resource;
  if (num_args != 3 || codes[0] != kTVMDLTensorHandle || codes[1] != kTVMDLTensorHandle ||
      codes[2] != kTVMDLTensorHandle) {
    TVMAPISetLastError("split2: expected 3 tensors (x, a, b)");
    return -1;
  }
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  const DLTensor* a = (const DLTensor*)args[1].v_handle;
  const DLTensor* b = (const DLTensor*)args[2].v_handle;
  int64_t n = Elements(x);
  if (Elements(a) * 2 != n || Elements(b) * 2 != n) {
    TVMAPISetLastError("split2: outputs must each hold half of the input");
    return -1;
  }
  const float* px = (const float*)x->data;
  memcpy(a->data, px, sizeof(float) * (size_t)(n / 2));
  memcpy(b->data, px + n / 2, sizeof(float) * (size_t)(n / 2));
  return 0;
}

GRAPH_KERNEL int fail(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                      void* resource) {
  (void)args;
  (void)codes;
  (void)num_args;
  (void)ret;
  (void)ret_code;
  (void)resource;
  TVMAPISetLastError("fail: deliberate kernel failure");
  return -1;
}

GRAPH_KERNEL int nop(TVMValue* args, int* codes, int num_args, TVMValue* ret, int* ret_code,
                     void* resource) {
  (void)args;
  (void)codes;
  (void)num_args;
  (void)ret;
  (void)ret_code;
  (void)resource;
  return 0;
}
