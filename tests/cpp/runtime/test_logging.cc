#include <ember/runtime/logging.h>
#include <gtest/gtest.h>

#include <string>

namespace ember::runtime {
namespace {

int ApiThatThrows(bool fail) {
  EMBER_API_BEGIN();
  EMBER_CHECK(!fail) << "asked to fail with code " << 7;
  EMBER_API_END();
}

int ApiThatThrowsForeign() {
  EMBER_API_BEGIN();
  throw 42;
  EMBER_API_END();
}

TEST(Logging, CheckThrowsErrorWithStreamedContext) {
  try {
    int x = 3;
    EMBER_CHECK(x == 4) << "x was " << x;
    FAIL() << "EMBER_CHECK did not throw";
  } catch (const Error& e) {
    // The sentence the check site wrote, not "Check failed: (x == 4) is false".
    EXPECT_STREQ(e.what(), "x was 3");
  }
}

TEST(Logging, CheckWithoutContextNamesTheCondition) {
  try {
    int x = 3;
    EMBER_CHECK(x == 4);
    FAIL() << "EMBER_CHECK did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "internal check failed: x == 4");
  }
}

TEST(Logging, CheckPassesSilentlyAndEvaluatesOnce) {
  int calls = 0;
  auto f = [&calls] { return ++calls; };
  EXPECT_NO_THROW(EMBER_CHECK(f() == 1) << "unused");
  EXPECT_EQ(calls, 1);
  EXPECT_NO_THROW(EMBER_CHECK_EQ(f(), 2));
  EXPECT_EQ(calls, 2);
}

TEST(Logging, CompareChecksPrintBothValues) {
  try {
    EMBER_CHECK_EQ(2 + 2, 5) << "arithmetic";
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "arithmetic (2 + 2 == 5: 4 vs. 5)");
  }
  EXPECT_THROW(EMBER_CHECK_LT(3, 2), Error);
  EXPECT_THROW(EMBER_CHECK_GE(1, 2), Error);
  EXPECT_NO_THROW(EMBER_CHECK_NE(1, 2));
}

TEST(Logging, CheckInsideIfElseBindsCorrectly) {
  bool reached_else = false;
  if (false)
    EMBER_CHECK(false) << "never";
  else
    reached_else = true;
  EXPECT_TRUE(reached_else);
}

TEST(Logging, LogFatalThrows) {
  EXPECT_THROW(EMBER_LOG_FATAL << "boom", Error);
  try {
    EMBER_LOG_FATAL << "file "
                    << "model.onnx"
                    << " is bad";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "file model.onnx is bad");
  }
}

TEST(Logging, ApiBoundaryReturnsMinusOneAndSetsLastError) {
  EXPECT_EQ(ApiThatThrows(false), 0);
  EXPECT_EQ(ApiThatThrows(true), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("asked to fail with code 7"), std::string::npos);
  EXPECT_EQ(ApiThatThrowsForeign(), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("unknown"), std::string::npos);
}

}  // namespace
}  // namespace ember::runtime
