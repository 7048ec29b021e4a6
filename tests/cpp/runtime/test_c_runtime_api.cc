// The C ABI exercised the way C programs and ctypes use it: handles, codes and -1 + last error.
#include <ember/runtime/c_backend_api.h>
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/registry.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "scoped_chdir.h"

namespace {

using ember::runtime::Registry;

TEST(LastError, IsPerThread) {
  TVMAPISetLastError("main thread failure");
  std::thread other([] {
    EXPECT_STREQ(TVMGetLastError(), "");
    TVMAPISetLastError("other thread failure");
  });
  other.join();
  EXPECT_EQ(std::string(TVMGetLastError()), "main thread failure");
}

EMBER_REGISTER_GLOBAL("test.capi.Sum").set_body_typed([](int64_t a, double b) {
  return static_cast<double>(a) + b;
});
EMBER_REGISTER_GLOBAL("test.capi.Greet").set_body_typed([](std::string name) {
  return "hello " + name;
});
EMBER_REGISTER_GLOBAL("test.capi.Throws").set_body_typed([](int code) -> int {
  EMBER_LOG_FATAL << "asked to fail with " << code;
});

TEST(CApi, CallGlobalFunctionAndReadResults) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("test.capi.Sum", &f), 0);
  ASSERT_NE(f, nullptr);
  TVMValue args[2];
  int codes[2] = {kTVMArgInt, kTVMArgFloat};
  args[0].v_int64 = 2;
  args[1].v_float64 = 0.5;
  TVMValue ret;
  int ret_code = -1;
  ASSERT_EQ(TVMFuncCall(f, args, codes, 2, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ret_code, kTVMArgFloat);
  EXPECT_EQ(ret.v_float64, 2.5);
  EXPECT_EQ(TVMFuncFree(f), 0);

  ASSERT_EQ(TVMFuncGetGlobal("test.capi.Greet", &f), 0);
  args[0].v_str = "ember";
  codes[0] = kTVMStr;
  ASSERT_EQ(TVMFuncCall(f, args, codes, 1, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ret_code, kTVMStr);
  EXPECT_STREQ(ret.v_str, "hello ember");
  TVMFuncFree(f);

  ASSERT_EQ(TVMFuncGetGlobal("test.capi.NoSuch", &f), 0);
  EXPECT_EQ(f, nullptr);
}

TEST(CApi, ErrorsBecomeMinusOneWithMessage) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("test.capi.Throws", &f), 0);
  TVMValue arg;
  arg.v_int64 = 9;
  int code = kTVMArgInt;
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code), -1);
  EXPECT_STREQ(TVMGetLastError(), "asked to fail with 9");
  arg.v_str = "nine";
  code = kTVMStr;
  EXPECT_EQ(TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code), -1);
  EXPECT_STREQ(TVMGetLastError(), "test.capi.Throws: argument 0 expected int, got str");
  TVMFuncFree(f);

  TVMModuleHandle mod = nullptr;
  EXPECT_EQ(TVMModLoadFromFile("/nonexistent/lib.so", "", &mod), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("/nonexistent/lib.so"), std::string::npos);
  EXPECT_EQ(TVMFuncRemoveGlobal("test.capi.NeverRegistered"), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("test.capi.NeverRegistered"), std::string::npos);
  TVMArrayHandle arr = nullptr;
  int64_t shape[1] = {-3};
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &arr), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("negative extent"), std::string::npos);
}

// A C callback with a finalizer, as a Python callable becomes a PackedFunc.
struct CallbackState {
  int calls = 0;
  bool finalized = false;
};

int DoubleIt(TVMValue* args, int* codes, int num_args, TVMRetValueHandle ret, void* resource) {
  auto* state = static_cast<CallbackState*>(resource);
  ++state->calls;
  if (num_args != 1 || codes[0] != kTVMArgInt) {
    TVMAPISetLastError("DoubleIt: expected one int");
    return -1;
  }
  TVMValue v;
  v.v_int64 = args[0].v_int64 * 2;
  int code = kTVMArgInt;
  return TVMCFuncSetReturn(ret, &v, &code, 1);
}

TEST(CApi, CallbackWithFinalizerRegisteredAsGlobal) {
  CallbackState state;
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(
      TVMFuncCreateFromCFunc(
          DoubleIt, &state,
          [](void* resource) { static_cast<CallbackState*>(resource)->finalized = true; }, &f),
      0);
  ASSERT_EQ(TVMFuncRegisterGlobal("test.capi.Double", f, 0), 0);
  EXPECT_EQ(TVMFuncRegisterGlobal("test.capi.Double", f, 0), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("already registered"), std::string::npos);
  ASSERT_EQ(TVMFuncFree(f), 0);  // the registry still holds it
  EXPECT_FALSE(state.finalized);

  const ember::runtime::PackedFunc* pf = Registry::Get("test.capi.Double");
  ASSERT_NE(pf, nullptr);
  EXPECT_EQ((*pf)(21).As<int>(), 42);
  try {
    (*pf)("x");
    FAIL();
  } catch (const ember::runtime::Error& e) {
    EXPECT_STREQ(e.what(), "DoubleIt: expected one int");
  }
  EXPECT_EQ(state.calls, 2);

  int size = 0;
  const char** names = nullptr;
  ASSERT_EQ(TVMFuncListGlobalNames(&size, &names), 0);
  bool found = false;
  for (int i = 0; i < size; ++i) found |= std::string(names[i]) == "test.capi.Double";
  EXPECT_TRUE(found);

  ASSERT_EQ(TVMFuncRemoveGlobal("test.capi.Double"), 0);
  // Registry::Get pointers stay valid after removal, so the function lives on; dropping the
  // callback itself is what the finalizer reports. A fresh one shows it.
  CallbackState state2;
  ASSERT_EQ(
      TVMFuncCreateFromCFunc(
          DoubleIt, &state2,
          [](void* resource) { static_cast<CallbackState*>(resource)->finalized = true; }, &f),
      0);
  EXPECT_FALSE(state2.finalized);
  TVMFuncFree(f);
  EXPECT_TRUE(state2.finalized);
}

// Borrowed object arguments, turned into owned returns with TVMCbArgToReturn.
int ReturnFirstArg(TVMValue* args, int* codes, int, TVMRetValueHandle ret, void*) {
  TVMValue v = args[0];
  int code = codes[0];
  if (TVMCbArgToReturn(&v, &code) != 0) return -1;
  int rc = TVMCFuncSetReturn(ret, &v, &code, 1);
  // SetReturn copied: release the reference CbArgToReturn gave us.
  if (code == kTVMNDArrayHandle) TVMArrayFree(static_cast<TVMArrayHandle>(v.v_handle));
  return rc;
}

TEST(CApi, CallbackReturnsItsArrayArgument) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncCreateFromCFunc(ReturnFirstArg, nullptr, nullptr, &f), 0);
  TVMArrayHandle arr = nullptr;
  int64_t shape[2] = {2, 3};
  ASSERT_EQ(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &arr), 0);
  TVMValue arg;
  arg.v_handle = arr;
  int code = kTVMNDArrayHandle;
  TVMValue ret;
  int ret_code;
  ASSERT_EQ(TVMFuncCall(f, &arg, &code, 1, &ret, &ret_code), 0) << TVMGetLastError();
  EXPECT_EQ(ret_code, kTVMNDArrayHandle);
  EXPECT_EQ(ret.v_handle, arr);  // same array, one more reference
  TVMArrayFree(static_cast<TVMArrayHandle>(ret.v_handle));
  TVMArrayFree(arr);
  TVMFuncFree(f);
}

TEST(CApi, ArraysAllocCopyAndDLPack) {
  int64_t shape[2] = {2, 2};
  TVMArrayHandle a = nullptr, b = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &a), 0);
  ASSERT_EQ(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &b), 0);
  EXPECT_EQ(a->ndim, 2);
  EXPECT_EQ(a->shape[1], 2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a->data) % 64, 0u);
  float in[4] = {1, 2, 3, 4}, out[4] = {};
  ASSERT_EQ(TVMArrayCopyFromBytes(a, in, sizeof(in)), 0);
  ASSERT_EQ(TVMArrayCopyFromTo(a, b, nullptr), 0);
  ASSERT_EQ(TVMArrayCopyToBytes(b, out, sizeof(out)), 0);
  EXPECT_EQ(std::memcmp(in, out, sizeof(in)), 0);
  EXPECT_EQ(TVMArrayCopyToBytes(b, out, 3), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("byte size mismatch"), std::string::npos);

  DLManagedTensor* managed = nullptr;
  ASSERT_EQ(TVMArrayToDLPack(a, &managed), 0);
  ASSERT_EQ(TVMArrayFree(a), 0);  // the DLPack tensor keeps the memory
  TVMArrayHandle c = nullptr;
  ASSERT_EQ(TVMArrayFromDLPack(managed, &c), 0);
  ASSERT_EQ(TVMArrayCopyToBytes(c, out, sizeof(out)), 0);
  EXPECT_EQ(out[3], 4.0f);
  TVMArrayFree(c);
  TVMArrayFree(b);

  unsigned tindex = 0;
  ASSERT_EQ(TVMObjectTypeKey2Index("runtime.NDArray", &tindex), 0);
  EXPECT_EQ(tindex, 2u);
  char* key = nullptr;
  ASSERT_EQ(TVMObjectTypeIndex2Key(3, &key), 0);
  EXPECT_STREQ(key, "runtime.String");
  std::free(key);
  EXPECT_EQ(TVMObjectTypeKey2Index("no.such.Type", &tindex), -1);

  void* mem = nullptr;
  ASSERT_EQ(
      TVMDeviceAllocDataSpace(DLDevice{kDLCPU, 0}, 100, 128, DLDataType{kDLFloat, 32, 1}, &mem), 0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(mem) % 128, 0u);
  EXPECT_EQ(TVMDeviceFreeDataSpace(DLDevice{kDLCPU, 0}, mem), 0);
  EXPECT_EQ(TVMSynchronize(kDLCPU, 0, nullptr), 0);
}

TEST(CApi, ModuleLoadGetFunctionCallFree) {
  TVMModuleHandle mod = nullptr;
  ASSERT_EQ(TVMModLoadFromFile(EMBER_TEST_KERNELS_PATH, "", &mod), 0) << TVMGetLastError();
  unsigned tindex = 0;
  ASSERT_EQ(TVMObjectGetTypeIndex(mod, &tindex), 0);
  EXPECT_EQ(tindex, 1u);  // runtime.Module
  TVMFunctionHandle relu = nullptr;
  ASSERT_EQ(TVMModGetFunction(mod, "relu", 0, &relu), 0);
  ASSERT_NE(relu, nullptr);
  TVMFunctionHandle missing = nullptr;
  ASSERT_EQ(TVMModGetFunction(mod, "missing", 1, &missing), 0);
  EXPECT_EQ(missing, nullptr);

  int64_t shape[1] = {3};
  TVMArrayHandle x = nullptr, y = nullptr;
  TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &x);
  TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &y);
  float in[3] = {-1, 0, 5}, out[3];
  TVMArrayCopyFromBytes(x, in, sizeof(in));
  TVMValue args[2];
  int codes[2] = {kTVMDLTensorHandle, kTVMDLTensorHandle};
  args[0].v_handle = x;
  args[1].v_handle = y;
  TVMValue ret;
  int ret_code;
  ASSERT_EQ(TVMFuncCall(relu, args, codes, 2, &ret, &ret_code), 0) << TVMGetLastError();
  TVMArrayCopyToBytes(y, out, sizeof(out));
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[2], 5.0f);
  // A kernel's own error comes back through TVMGetLastError.
  EXPECT_EQ(TVMFuncCall(relu, args, codes, 1, &ret, &ret_code), -1);
  EXPECT_STREQ(TVMGetLastError(), "relu: expected 2 arguments (x, out)");

  TVMModuleHandle dep = nullptr;
  ASSERT_EQ(TVMModLoadFromFile(EMBER_TEST_KERNELS_PATH, "so", &dep), 0);
  ASSERT_EQ(TVMModImport(mod, dep), 0);
  EXPECT_EQ(TVMModImport(dep, mod), -1);  // cycle
  TVMModFree(dep);
  TVMArrayFree(x);
  TVMArrayFree(y);
  TVMFuncFree(relu);  // the function held the module; free order does not matter
  TVMModFree(mod);
}

TEST(CApi, ModuleLoadTakesABareFileName) {
  std::filesystem::path lib(EMBER_TEST_KERNELS_PATH);
  ember::runtime::test_util::ScopedChdir in_lib_dir(lib.parent_path());
  TVMModuleHandle mod = nullptr;
  ASSERT_EQ(TVMModLoadFromFile(lib.filename().c_str(), "", &mod), 0) << TVMGetLastError();
  TVMFunctionHandle relu = nullptr;
  EXPECT_EQ(TVMModGetFunction(mod, "relu", 0, &relu), 0);
  EXPECT_NE(relu, nullptr);
  TVMFuncFree(relu);
  TVMModFree(mod);
}

TEST(CApi, NoExceptionCrossesNullArguments) {
  EXPECT_EQ(TVMFuncCall(nullptr, nullptr, nullptr, 0, nullptr, nullptr), -1);
  EXPECT_EQ(TVMFuncGetGlobal(nullptr, nullptr), -1);
  EXPECT_EQ(TVMModGetFunction(nullptr, "x", 0, nullptr), -1);
  EXPECT_EQ(TVMArrayCopyFromBytes(nullptr, nullptr, 0), -1);
  EXPECT_EQ(TVMBackendGetFuncFromEnv(nullptr, "f", nullptr), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("__tvm_module_ctx"), std::string::npos);
  EXPECT_EQ(TVMArrayFree(nullptr), 0);
  EXPECT_EQ(TVMObjectFree(nullptr), 0);
}

}  // namespace
