// The system library, statically linked: the test kernels are compiled into this executable with
// EMBER_TEST_SYSTEM_LIB, register themselves at static-init time, and are reached through
// runtime.SystemLib with no dlopen — the shape of apps/bundle_static.
#include <ember/runtime/c_runtime_api.h>
#include <ember/runtime/module.h>
#include <ember/runtime/packed_func.h>
#include <ember/runtime/registry.h>
#include <gtest/gtest.h>

#include <vector>

namespace ember::runtime {
namespace {

Module SystemLib() {
  const PackedFunc* f = Registry::Get("runtime.SystemLib");
  EXPECT_NE(f, nullptr);
  return (*f)().As<Module>();
}

TEST(SystemLib, KernelsRegisteredAtStaticInit) {
  Module lib = SystemLib();
  EXPECT_STREQ(lib->type_key(), "system_lib");
  EXPECT_TRUE(lib.same_as(SystemLib()));  // one instance per process
  PackedFunc add = lib.GetFunction("add");
  ASSERT_NE(add, nullptr);
  NDArray a = NDArray::Empty({3}, kFloat32, kCPU);
  NDArray b = NDArray::Empty({3}, kFloat32, kCPU);
  NDArray out = NDArray::Empty({3}, kFloat32, kCPU);
  std::vector<float> va{1, 2, 3}, vb{10, 20, 30}, vo(3);
  a.CopyFromBytes(va.data(), 12);
  b.CopyFromBytes(vb.data(), 12);
  add(a, b, out);
  out.CopyToBytes(vo.data(), 12);
  EXPECT_EQ(vo, (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(lib.GetFunction("missing"), nullptr);
  // __tvm_main__ names "add".
  PackedFunc main_fn = lib.GetFunction("__tvm_main__");
  ASSERT_NE(main_fn, nullptr);
  main_fn(a, a, out);
  out.CopyToBytes(vo.data(), 12);
  EXPECT_EQ(vo, (std::vector<float>{2, 4, 6}));
}

TEST(SystemLib, ModuleContextAndErrorsThroughCAbi) {
  Module lib = SystemLib();
  // call_env finds add_one through __tvm_module_ctx and TVMBackendGetFuncFromEnv.
  PackedFunc call_env = lib.GetFunction("call_env");
  ASSERT_NE(call_env, nullptr);
  EXPECT_EQ(call_env("add_one", 41).As<int>(), 42);
  try {
    call_env("no_such_function", 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_function"), std::string::npos) << e.what();
  }
  PackedFunc relu = lib.GetFunction("relu");
  NDArray x = NDArray::Empty({2}, kInt32, kCPU);
  try {
    relu(x, x);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "relu: argument 0 expected float32");
  }
}

}  // namespace
}  // namespace ember::runtime
