// Proves the PackedFunc and C ABI call paths allocate nothing (see alloc_counter.h).
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/packed_func.h>
#include <ember/runtime/registry.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "alloc_counter.h"

namespace ember::runtime {
namespace {

using ember::testing::AllocCounter;

TEST(PackedFunc, CallAllocatesNothing) {
  PackedFunc f([](TVMArgs args, TVMRetValue* rv) {
    *rv = args[0].As<int64_t>() + args[1].As<int64_t>() + args[2].As<int64_t>();
  });
  TypedPackedFunc<int(int, int, int)> typed([](int a, int b, int c) { return a + b + c; }, "t");
  NDArray arr = NDArray::Empty({8}, kFloat32, kCPU);
  PackedFunc takes_arr([](TVMArgs args, TVMRetValue* rv) {
    NDArray a = args[0];
    DLTensor* t = args[0];
    *rv = a;
    (void)t;
  });
  int64_t sum = 0;
  AllocCounter counter;
  for (int i = 0; i < 100; ++i) {
    sum += f(i, 2, 3).As<int64_t>();
    sum += typed(i, 1, 1);
    NDArray back = takes_arr(arr);
    sum += back->ndim;
  }
  int64_t allocs = counter.count();
  EXPECT_EQ(allocs, 0);
  EXPECT_GT(sum, 0);
}

TEST(PackedFunc, AllocationCounterWorks) {
  // The counter above must be able to fail: a call that builds a string is counted.
  PackedFunc f([](TVMArgs, TVMRetValue* rv) { *rv = std::string(100, 'x'); });
  AllocCounter counter;
  TVMRetValue rv = f();
  EXPECT_GT(counter.count(), 0);
}

EMBER_REGISTER_GLOBAL("test.alloc.Sum3").set_body([](TVMArgs args, TVMRetValue* rv) {
  *rv = args[0].As<int64_t>() + args[1].As<int64_t>() + args[2].As<int64_t>();
});

TEST(CAbi, TVMFuncCallAllocatesNothing) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMFuncGetGlobal("test.alloc.Sum3", &f), 0);
  ASSERT_NE(f, nullptr);
  TVMValue args[3];
  int codes[3] = {kTVMArgInt, kTVMArgInt, kTVMArgInt};
  int64_t sum = 0;
  {
    AllocCounter counter;
    for (int i = 0; i < 100; ++i) {
      args[0].v_int64 = i;
      args[1].v_int64 = 1;
      args[2].v_int64 = 2;
      TVMValue ret;
      int ret_code = 0;
      ASSERT_EQ(TVMFuncCall(f, args, codes, 3, &ret, &ret_code), 0);
      ASSERT_EQ(ret_code, kTVMArgInt);
      sum += ret.v_int64;
    }
    EXPECT_EQ(counter.count(), 0);
  }
  EXPECT_EQ(sum, 4950 + 300);
  TVMFuncFree(f);
}

}  // namespace
}  // namespace ember::runtime
