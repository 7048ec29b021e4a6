#include <ember/runtime/c_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

TEST(LastError, IsPerThread) {
  TVMAPISetLastError("main thread failure");
  std::thread other([] {
    EXPECT_STREQ(TVMGetLastError(), "");
    TVMAPISetLastError("other thread failure");
  });
  other.join();
  EXPECT_EQ(std::string(TVMGetLastError()), "main thread failure");
}
