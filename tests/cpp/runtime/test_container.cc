#include <ember/runtime/container.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace ember::runtime {
namespace {

TEST(String, ConvertsAndComparesByContent) {
  String a("hello");
  std::string s = a;
  EXPECT_EQ(s, "hello");
  EXPECT_EQ(a.size(), 5u);
  EXPECT_TRUE(a == String(std::string("hello")));
  EXPECT_TRUE(a == "hello");
  EXPECT_FALSE(a == "hell");
  EXPECT_TRUE(String("a") < String("b"));
  String with_zero(std::string("a\0b", 3));
  EXPECT_EQ(with_zero.size(), 3u);
  EXPECT_EQ(String().size(), 0u);
}

TEST(Array, CopyOnWriteKeepsCopiesIndependent) {
  Array<String> a{"x", "y"};
  Array<String> b = a;
  EXPECT_TRUE(a.same_as(b));
  b.push_back("z");
  EXPECT_FALSE(a.same_as(b));
  EXPECT_EQ(a.size(), 2u);
  EXPECT_EQ(b.size(), 3u);
  EXPECT_EQ(b[2], "z");
  // An unshared array mutates in place.
  const ArrayNode* before = b.get();
  b.Set(0, "w");
  EXPECT_EQ(b.get(), before);
  EXPECT_EQ(b[0], "w");
  EXPECT_EQ(a[0], "x");
  std::vector<std::string> seen;
  for (String s : b) seen.push_back(s);
  EXPECT_EQ(seen, (std::vector<std::string>{"w", "y", "z"}));
  EXPECT_THROW(a[5], Error);
  b.pop_back();
  EXPECT_EQ(b.size(), 2u);
  b.clear();
  EXPECT_TRUE(b.empty());
}

TEST(Array, SharedAcrossThreadsIsSafe) {
  Array<String> shared{"a", "b", "c"};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([shared] {
      for (int i = 0; i < 1000; ++i) {
        Array<String> mine = shared;
        mine.push_back("x");
        EXPECT_EQ(mine.size(), 4u);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(shared.size(), 3u);
}

TEST(Map, StringKeysByContentInInsertionOrder) {
  Map<String, String> m;
  m.Set("b", "1");
  m.Set("a", "2");
  m.Set(String(std::string("b")), "3");  // a different String object, same content
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.at("b"), "3");
  EXPECT_EQ(m.count("a"), 1u);
  EXPECT_EQ(m.count("c"), 0u);
  EXPECT_THROW(m.at("c"), Error);
  std::vector<std::string> keys;
  for (auto kv : m) keys.push_back(kv.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"b", "a"}));
  Map<String, String> copy = m;
  copy.Set("c", "4");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(copy.size(), 3u);
  EXPECT_TRUE(copy.erase("b"));
  EXPECT_FALSE(copy.erase("b"));
  EXPECT_EQ(copy.at("c"), "4");
  String out;
  EXPECT_TRUE(copy.Get("a", &out));
  EXPECT_EQ(out, "2");
}

TEST(ShapeTuple, HoldsExtents) {
  ShapeTuple s{1, 3, 224, 224};
  EXPECT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1], 3);
  EXPECT_EQ(s.Product(), 1 * 3 * 224 * 224);
  EXPECT_TRUE(s == ShapeTuple(std::vector<int64_t>{1, 3, 224, 224}));
  EXPECT_FALSE(s == ShapeTuple({1, 3}));
  EXPECT_EQ(ShapeTuple().Product(), 1);
  std::ostringstream os;
  os << s;
  EXPECT_EQ(os.str(), "[1, 3, 224, 224]");
  EXPECT_THROW(s[4], Error);
}

TEST(Optional, ValueOrNothing) {
  Optional<String> none;
  EXPECT_FALSE(none.has_value());
  EXPECT_THROW(none.value(), Error);
  EXPECT_EQ(none.value_or(String("d")), "d");
  Optional<String> some = String("v");
  EXPECT_TRUE(some.has_value());
  EXPECT_EQ(some.value(), "v");
}

}  // namespace
}  // namespace ember::runtime
