// Test helper: runs a scope in another working directory, as a user who typed a bare file name.
#ifndef EMBER_TESTS_CPP_RUNTIME_SCOPED_CHDIR_H_
#define EMBER_TESTS_CPP_RUNTIME_SCOPED_CHDIR_H_

#include <filesystem>

namespace ember::runtime::test_util {

class ScopedChdir {
 public:
  explicit ScopedChdir(const std::filesystem::path& dir)
      : previous_(std::filesystem::current_path()) {
    std::filesystem::current_path(dir);
  }
  ~ScopedChdir() { std::filesystem::current_path(previous_); }
  ScopedChdir(const ScopedChdir&) = delete;
  ScopedChdir& operator=(const ScopedChdir&) = delete;

 private:
  std::filesystem::path previous_;
};

}  // namespace ember::runtime::test_util

#endif  // EMBER_TESTS_CPP_RUNTIME_SCOPED_CHDIR_H_
