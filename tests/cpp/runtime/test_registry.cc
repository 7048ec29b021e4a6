#include <ember/runtime/registry.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace ember::runtime {
namespace {

EMBER_REGISTER_GLOBAL("test.registry.Add").set_body_typed([](int a, int b) { return a + b; });
EMBER_REGISTER_GLOBAL("test.registry.Packed").set_body([](TVMArgs args, TVMRetValue* rv) {
  *rv = args.size();
});

class CounterNode : public Object {
 public:
  int value = 0;
  int Get() const { return value; }
  int AddTo(int x) {
    value += x;
    return value;
  }
  static constexpr const char* _type_key = "test.Counter";
  EMBER_DECLARE_FINAL_OBJECT_INFO(CounterNode, Object);
};
class Counter : public ObjectRef {
 public:
  EMBER_DEFINE_OBJECT_REF_METHODS(Counter, ObjectRef, CounterNode);
  int Twice(int x) const { return 2 * x + get()->value; }
};

EMBER_REGISTER_GLOBAL("test.registry.CounterGet").set_body_method<Counter>(&CounterNode::Get);
EMBER_REGISTER_GLOBAL("test.registry.CounterAdd").set_body_method<Counter>(&CounterNode::AddTo);
EMBER_REGISTER_GLOBAL("test.registry.CounterTwice").set_body_method(&Counter::Twice);

TEST(Registry, StaticRegistrationIsVisible) {
  const PackedFunc* add = Registry::Get("test.registry.Add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ((*add)(2, 3).As<int>(), 5);
  try {
    (*add)(2, "x");
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "test.registry.Add: argument 1 expected int, got str");
  }
  EXPECT_EQ((*Registry::Get("test.registry.Packed"))(1, 2, 3).As<int>(), 3);
  EXPECT_EQ(Registry::Get("test.registry.Missing"), nullptr);
  auto names = Registry::ListNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "test.registry.Add"), names.end());
}

TEST(Registry, SetBodyMethod) {
  Counter c(make_object<CounterNode>());
  EXPECT_EQ((*Registry::Get("test.registry.CounterAdd"))(c, 5).As<int>(), 5);
  EXPECT_EQ((*Registry::Get("test.registry.CounterGet"))(c).As<int>(), 5);
  EXPECT_EQ((*Registry::Get("test.registry.CounterTwice"))(c, 1).As<int>(), 7);
}

TEST(Registry, DuplicateIsAnErrorUnlessOverride) {
  Registry::Register("test.registry.Dup").set_body_typed([] { return 1; });
  try {
    Registry::Register("test.registry.Dup");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("already registered"), std::string::npos);
  }
  const PackedFunc* old = Registry::Get("test.registry.Dup");
  Registry::Register("test.registry.Dup", true).set_body_typed([] { return 2; });
  EXPECT_EQ((*Registry::Get("test.registry.Dup"))().As<int>(), 2);
  // The old pointer stays callable.
  EXPECT_EQ((*old)().As<int>(), 1);
  EXPECT_TRUE(Registry::Remove("test.registry.Dup"));
  EXPECT_FALSE(Registry::Remove("test.registry.Dup"));
  EXPECT_EQ(Registry::Get("test.registry.Dup"), nullptr);
}

TEST(Registry, ConcurrentRegistrationAndLookup) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string name = "test.concurrent." + std::to_string(t) + "." + std::to_string(i);
        Registry::Register(name).set_body_typed([i] { return i; });
        const PackedFunc* f = Registry::Get(name);
        if (f == nullptr || (*f)().As<int>() != i) ++failures;
        const PackedFunc* shared = Registry::Get("test.registry.Add");
        if (shared == nullptr || (*shared)(i, 1).As<int>() != i + 1) ++failures;
        if (i % 50 == 0) Registry::ListNames();
        if (i % 2 == 0 && !Registry::Remove(name)) ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  int remaining = 0;
  for (const auto& n : Registry::ListNames()) {
    if (n.rfind("test.concurrent.", 0) == 0) ++remaining;
  }
  EXPECT_EQ(remaining, kThreads * kPerThread / 2);
}

}  // namespace
}  // namespace ember::runtime
