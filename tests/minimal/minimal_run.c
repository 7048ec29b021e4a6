/* The minimal runtime's test driver (EMBER_RUNTIME_MINIMAL=ON), in C through the C ABI alone:
 * what an app on a board does, and what the minimal runtime keeps.
 *
 *   ember_minimal_run ARTIFACT INPUT.npy OUTDIR   sets input 0 from INPUT.npy, runs, writes
 *                                                 OUTDIR/output_<i>.npy for every output
 *   ember_minimal_run --check-absent ARTIFACT     calls what the minimal build leaves out through
 *                                                 the C ABI; each must fail with a message naming
 *                                                 EMBER_RUNTIME_MINIMAL (exit 0 if all do)
 *
 * The runtime has no .npy reader in this build, so the driver reads and writes the simple case
 * itself: version 1 or 2, little-endian or byte-sized numbers, C order.
 */
#include <ember/runtime/c_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define kMaxDims 16

static void Fail(const char* what) {
  fprintf(stderr, "ember_minimal_run: %s: %s\n", what, TVMGetLastError());
  exit(1);
}

#define CALL(expr)                \
  do {                            \
    if ((expr) != 0) Fail(#expr); \
  } while (0)

static char* ReadFile(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    fprintf(stderr, "ember_minimal_run: cannot open %s\n", path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* data = malloc((size_t)n + 1);
  if (data == NULL || fread(data, 1, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "ember_minimal_run: cannot read %s\n", path);
    exit(1);
  }
  fclose(f);
  data[n] = '\0';
  *size = (size_t)n;
  return data;
}

struct Dtype {
  const char* descr;
  int code, bits;
};
static const struct Dtype kDtypes[] = {
    {"<f4", kDLFloat, 32}, {"<f8", kDLFloat, 64}, {"<f2", kDLFloat, 16},
    {"<i8", kDLInt, 64},   {"<i4", kDLInt, 32},   {"<i2", kDLInt, 16},
    {"|i1", kDLInt, 8},    {"|u1", kDLUInt, 8},   {"|b1", kDLUInt, 1},
};
static const int kNumDtypes = (int)(sizeof(kDtypes) / sizeof(kDtypes[0]));

/* Loads INPUT.npy into a new array. */
static TVMArrayHandle LoadNpy(const char* path) {
  size_t size;
  char* file = ReadFile(path, &size);
  if (size < 10 || memcmp(file, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "ember_minimal_run: %s is not a .npy file\n", path);
    exit(1);
  }
  size_t header_len = file[6] == 1
                          ? (size_t)(unsigned char)file[8] | ((size_t)(unsigned char)file[9] << 8)
                          : (size_t)(unsigned char)file[8] | ((size_t)(unsigned char)file[9] << 8) |
                                ((size_t)(unsigned char)file[10] << 16);
  size_t offset = (file[6] == 1 ? 10 : 12) + header_len;
  char* header = file + (file[6] == 1 ? 10 : 12);
  const struct Dtype* dtype = NULL;
  for (int i = 0; i < kNumDtypes; ++i) {
    if (strstr(header, kDtypes[i].descr) != NULL) dtype = &kDtypes[i];
  }
  char* shape_text = strstr(header, "'shape': (");
  if (dtype == NULL || shape_text == NULL || strstr(header, "'fortran_order': False") == NULL ||
      offset > size) {
    fprintf(stderr, "ember_minimal_run: %s: unsupported .npy header\n", path);
    exit(1);
  }
  tvm_index_t shape[kMaxDims];
  int ndim = 0;
  size_t count = 1;
  for (char* p = shape_text + strlen("'shape': ("); *p != ')' && ndim < kMaxDims;) {
    char* end;
    long long d = strtoll(p, &end, 10);
    if (end == p) break;
    shape[ndim++] = d;
    count *= (size_t)d;
    p = end;
    while (*p == ',' || *p == ' ') ++p;
  }
  size_t nbytes = count * (size_t)((dtype->bits + 7) / 8);
  if (offset + nbytes != size) {
    fprintf(stderr, "ember_minimal_run: %s: %zu data bytes, expected %zu\n", path, size - offset,
            nbytes);
    exit(1);
  }
  TVMArrayHandle arr;
  CALL(TVMArrayAlloc(shape, ndim, dtype->code, dtype->bits, 1, kDLCPU, 0, &arr));
  CALL(TVMArrayCopyFromBytes(arr, file + offset, nbytes));
  free(file);
  return arr;
}

static void SaveNpy(const char* path, DLTensor* t) {
  const char* descr = NULL;
  for (int i = 0; i < kNumDtypes; ++i) {
    if (kDtypes[i].code == t->dtype.code && kDtypes[i].bits == t->dtype.bits) {
      descr = kDtypes[i].descr;
    }
  }
  if (descr == NULL || t->dtype.lanes != 1) {
    fprintf(stderr, "ember_minimal_run: %s: unsupported output dtype\n", path);
    exit(1);
  }
  char header[512];
  int len =
      snprintf(header, sizeof(header), "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  size_t count = 1;
  for (int i = 0; i < t->ndim; ++i) {
    len += snprintf(header + len, sizeof(header) - (size_t)len, "%lld,%s", (long long)t->shape[i],
                    i + 1 < t->ndim ? " " : "");
    count *= (size_t)t->shape[i];
  }
  len += snprintf(header + len, sizeof(header) - (size_t)len, "), }");
  /* Magic, version, length, header and newline fill a multiple of 64 bytes. */
  int total = (10 + len + 1 + 63) / 64 * 64;
  while (10 + len + 1 < total) header[len++] = ' ';
  header[len++] = '\n';
  size_t nbytes = count * (size_t)((t->dtype.bits + 7) / 8);
  char* data = malloc(nbytes + 1);
  CALL(TVMArrayCopyToBytes(t, data, nbytes));
  FILE* f = fopen(path, "wb");
  unsigned char prefix[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
  if (f == NULL || fwrite(prefix, 1, 10, f) != 10 ||
      fwrite(header, 1, (size_t)len, f) != (size_t)len || fwrite(data, 1, nbytes, f) != nbytes ||
      fclose(f) != 0) {
    fprintf(stderr, "ember_minimal_run: cannot write %s\n", path);
    exit(1);
  }
  free(data);
}

static TVMFunctionHandle GetFunction(TVMModuleHandle mod, const char* name) {
  TVMFunctionHandle f;
  CALL(TVMModGetFunction(mod, name, 0, &f));
  if (f == NULL) {
    fprintf(stderr, "ember_minimal_run: the module has no function %s\n", name);
    exit(1);
  }
  return f;
}

/* The artifact's executor, through the factory as every front end makes it. */
static TVMModuleHandle LoadExecutor(const char* artifact) {
  TVMFunctionHandle load;
  CALL(TVMFuncGetGlobal("runtime.load_artifact", &load));
  TVMValue arg, ret;
  int code = kTVMStr, ret_code;
  arg.v_str = artifact;
  CALL(TVMFuncCall(load, &arg, &code, 1, &ret, &ret_code));
  TVMModuleHandle factory = ret.v_handle;
  TVMFunctionHandle make = GetFunction(factory, "default");
  arg.v_device.device_type = kDLCPU;
  arg.v_device.device_id = 0;
  code = kDLDevice;
  CALL(TVMFuncCall(make, &arg, &code, 1, &ret, &ret_code));
  CALL(TVMFuncFree(make));
  CALL(TVMFuncFree(load));
  CALL(TVMModFree(factory));
  return ret.v_handle;
}

static int Run(const char* artifact, const char* input, const char* out_dir) {
  TVMModuleHandle exec = LoadExecutor(artifact);
  TVMArrayHandle arr = LoadNpy(input);
  TVMValue args[2], ret;
  int codes[2], ret_code;
  args[0].v_int64 = 0;
  codes[0] = kTVMArgInt;
  args[1].v_handle = arr;
  codes[1] = kTVMDLTensorHandle;
  TVMFunctionHandle set_input = GetFunction(exec, "set_input");
  CALL(TVMFuncCall(set_input, args, codes, 2, &ret, &ret_code));
  TVMFunctionHandle run = GetFunction(exec, "run");
  CALL(TVMFuncCall(run, NULL, NULL, 0, &ret, &ret_code));
  TVMFunctionHandle num_outputs = GetFunction(exec, "get_num_outputs");
  CALL(TVMFuncCall(num_outputs, NULL, NULL, 0, &ret, &ret_code));
  int n = (int)ret.v_int64;
  TVMFunctionHandle get_output = GetFunction(exec, "get_output");
  for (int i = 0; i < n; ++i) {
    args[0].v_int64 = i;
    CALL(TVMFuncCall(get_output, args, codes, 1, &ret, &ret_code));
    char path[4096];
    snprintf(path, sizeof(path), "%s/output_%d.npy", out_dir, i);
    SaveNpy(path, (DLTensor*)ret.v_handle);
    CALL(TVMArrayFree((TVMArrayHandle)ret.v_handle));
  }
  printf("ember_minimal_run: %s: %d output(s) written to %s\n", artifact, n, out_dir);
  CALL(TVMFuncFree(set_input));
  CALL(TVMFuncFree(run));
  CALL(TVMFuncFree(num_outputs));
  CALL(TVMFuncFree(get_output));
  CALL(TVMArrayFree(arr));
  CALL(TVMModFree(exec));
  return 0;
}

/* rc must be -1 and the message must name the build option. */
static int ExpectAbsent(const char* call, int rc) {
  const char* msg = TVMGetLastError();
  if (rc == 0 || msg == NULL || strstr(msg, "EMBER_RUNTIME_MINIMAL") == NULL) {
    fprintf(stderr, "FAIL %s: returned %d (%s)\n", call, rc, msg ? msg : "no message");
    return 1;
  }
  printf("ok   %s fails: %s\n", call, msg);
  return 0;
}

static int CheckAbsent(const char* artifact) {
  int failed = 0;
  int size;
  const char** names;
  failed += ExpectAbsent("TVMFuncListGlobalNames", TVMFuncListGlobalNames(&size, &names));
  DLManagedTensor managed;
  memset(&managed, 0, sizeof(managed));
  TVMArrayHandle arr;
  failed += ExpectAbsent("TVMArrayFromDLPack", TVMArrayFromDLPack(&managed, &arr));
  TVMModuleHandle exec = LoadExecutor(artifact);
  const char* debug_functions[] = {"profile", "profile_json", "run_individual", "trace_json"};
  for (int i = 0; i < 4; ++i) {
    TVMFunctionHandle f = GetFunction(exec, debug_functions[i]);
    TVMValue ret;
    int ret_code;
    char what[64];
    snprintf(what, sizeof(what), "executor function %s", debug_functions[i]);
    failed += ExpectAbsent(what, TVMFuncCall(f, NULL, NULL, 0, &ret, &ret_code));
    CALL(TVMFuncFree(f));
  }
  const char* globals[] = {"runtime.time_evaluator", "runtime.create_executor_pool"};
  for (int i = 0; i < 2; ++i) {
    TVMFunctionHandle g;
    CALL(TVMFuncGetGlobal(globals[i], &g));
    if (g != NULL) {
      fprintf(stderr, "FAIL global %s is registered in the minimal runtime\n", globals[i]);
      ++failed;
    } else {
      printf("ok   global %s is not registered\n", globals[i]);
    }
  }
  CALL(TVMModFree(exec));
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "--check-absent") == 0) return CheckAbsent(argv[2]);
  if (argc == 4) return Run(argv[1], argv[2], argv[3]);
  fprintf(stderr,
          "usage: %s ARTIFACT INPUT.npy OUTDIR\n"
          "       %s --check-absent ARTIFACT\n",
          argv[0], argv[0]);
  return 2;
}
