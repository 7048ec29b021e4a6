#include <ember/runtime/packed_func.h>
#include <gtest/gtest.h>

#include <string>

namespace ember::runtime {
namespace {

TEST(PackedFunc, CallsWithPodArgumentsAndReturns) {
  PackedFunc add([](TVMArgs args, TVMRetValue* rv) {
    *rv = args[0].As<int64_t>() + args[1].As<int64_t>() + args[2].As<int64_t>();
  });
  int64_t r = add(1, 2, 3);
  EXPECT_EQ(r, 6);
  PackedFunc echo([](TVMArgs args, TVMRetValue* rv) { *rv = args[0]; });
  EXPECT_EQ(echo(2.5).As<double>(), 2.5);
  EXPECT_EQ(echo(true).As<bool>(), true);
  EXPECT_EQ(echo(true).type_code(), kTVMArgBool);
  EXPECT_EQ(echo(nullptr).type_code(), kTVMNullptr);
  EXPECT_EQ(echo(std::string("text")).As<std::string>(), "text");
  EXPECT_EQ(echo("literal").As<std::string>(), "literal");
  EXPECT_EQ(echo(String("obj")).As<String>(), "obj");
  int x = 0;
  EXPECT_EQ(echo(static_cast<void*>(&x)).As<void*>(), &x);
  DLDevice dev = echo(DLDevice{kDLCPU, 3});
  EXPECT_EQ(dev.device_id, 3);
  DLDataType dt = echo(kFloat16);
  EXPECT_EQ(dt, kFloat16);
  EXPECT_EQ(echo("int8").As<DLDataType>(), kInt8);
  EXPECT_EQ(echo(kInt8).As<std::string>(), "int8");
  std::string bytes("a\0b", 3);
  TVMByteArray arr{bytes.data(), bytes.size()};
  EXPECT_EQ(echo(arr).As<std::string>(), bytes);
}

TEST(PackedFunc, PassesObjects) {
  PackedFunc echo([](TVMArgs args, TVMRetValue* rv) { *rv = args[0]; });
  NDArray a = NDArray::Empty({2, 3}, kFloat32, kCPU);
  NDArray b = echo(a);
  EXPECT_TRUE(a.same_as(b));
  EXPECT_EQ(echo(a).type_code(), kTVMNDArrayHandle);
  DLTensor* t = echo(a);
  EXPECT_EQ(t, NDArray::FFIGetHandle(a));
  Array<String> list{"p", "q"};
  Array<String> back = echo(list);
  EXPECT_TRUE(back.same_as(list));
  PackedFunc inner([](TVMArgs, TVMRetValue* rv) { *rv = 7; });
  PackedFunc f = echo(inner);
  EXPECT_EQ(f().As<int>(), 7);
  ObjectRef any = echo(list);
  EXPECT_TRUE(any.same_as(list));
  EXPECT_FALSE(echo(NDArray()).As<NDArray>().defined());
}

TEST(PackedFunc, RetValueOwnsAndCopies) {
  TVMRetValue rv;
  {
    NDArray a = NDArray::Empty({4}, kFloat32, kCPU);
    rv = a;
    EXPECT_EQ(a.use_count(), 2);
  }
  TVMRetValue copy = rv;
  NDArray held = copy;
  EXPECT_EQ(held.use_count(), 3);
  rv = 5;
  EXPECT_EQ(held.use_count(), 2);
  TVMRetValue moved = std::move(copy);
  EXPECT_EQ(held.use_count(), 2);
  moved = std::string("s");
  EXPECT_EQ(held.use_count(), 1);
  EXPECT_EQ(moved.As<std::string>(), "s");
  TVMRetValue s2 = moved;
  EXPECT_EQ(s2.As<std::string>(), "s");
}

TEST(PackedFunc, WrongArgumentTypeSaysWhich) {
  PackedFunc f([](TVMArgs args, TVMRetValue* rv) { *rv = args[0].As<int>(); });
  try {
    f("str");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "expected int, got str");
  }
  TypedPackedFunc<int(int, int, int)> foo([](int a, int b, int c) { return a + b + c; }, "foo");
  EXPECT_EQ(foo(1, 2, 3), 6);
  PackedFunc packed = foo;
  try {
    packed(1, 2, "three");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "foo: argument 2 expected int, got str");
  }
  try {
    packed(1, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "foo: expected 3 arguments, got 2");
  }
  TypedPackedFunc<void(NDArray)> takes_array([](NDArray) {}, "takes_array");
  try {
    takes_array.packed()(String("no"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "takes_array: argument 0 expected NDArray, got str");
  }
  try {
    takes_array.packed()(Array<String>());
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "takes_array: argument 0 expected NDArray, got runtime.Array");
  }
  TypedPackedFunc<int(int8_t)> narrow([](int8_t v) { return v; }, "narrow");
  EXPECT_THROW(narrow.packed()(1000), Error);
  PackedFunc g([](TVMArgs args, TVMRetValue*) { args[3]; });
  EXPECT_THROW(g(1), Error);
}

TEST(PackedFunc, TypedPackedFuncConvertsEveryKind) {
  TypedPackedFunc<std::string(std::string, String, double, bool)> f(
      [](std::string a, String b, double c, bool d) {
        return a + b.str() + std::to_string(static_cast<int>(c)) + (d ? "T" : "F");
      },
      "concat");
  EXPECT_EQ(f("x", String("y"), 3.0, true), "xy3T");
  TypedPackedFunc<NDArray(NDArray, DLDataType, DLDevice)> g(
      [](NDArray a, DLDataType, DLDevice) { return a; }, "g");
  NDArray a = NDArray::Empty({1}, kFloat32, kCPU);
  EXPECT_TRUE(g(a, kFloat32, kCPU).same_as(a));
  TypedPackedFunc<void()> nothing([]() {});
  nothing();
  TypedPackedFunc<float(float)> half([](float v) { return v / 2; });
  EXPECT_FLOAT_EQ(half(3.0f), 1.5f);
  TypedPackedFunc<size_t(size_t)> sz([](size_t v) { return v + 1; });
  EXPECT_EQ(sz(41), 42u);
  TypedPackedFunc<int(PackedFunc)> call_it([](PackedFunc p) { return p(20).As<int>() + 1; });
  EXPECT_EQ(call_it(PackedFunc([](TVMArgs args, TVMRetValue* rv) { *rv = args[0].As<int>() * 2; })),
            41);
}

}  // namespace
}  // namespace ember::runtime
