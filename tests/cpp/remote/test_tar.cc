// ustar: what we write, GNU tar unpacks; what GNU tar writes of a directory, we read; a member
// leaving the directory is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "remote/process.h"
#include "remote/tar.h"

namespace ember::remote {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ostringstream s;
  s << std::ifstream(p, std::ios::binary).rdbuf();
  return s.str();
}

class Tar : public testing::Test {
 protected:
  void SetUp() override {
    // ctest runs each case as a process of its own, in parallel: one directory per case.
    dir_ = fs::path(testing::TempDir()) /
           ("ember_tar_test_" +
            std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "src");
    fs::create_directories(dir_ / "dst");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(Tar, GnuTarUnpacksWhatWeWrite) {
  std::string big(70000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  std::ofstream(dir_ / "src" / "a", std::ios::binary) << big;
  std::ofstream(dir_ / "src" / "b") << "";  // empty: no data blocks
  std::string tar = (dir_ / "x.tar").string();
  WriteTar({{(dir_ / "src" / "a").string(), "rt-aarch64/ember-run", true},
            {(dir_ / "src" / "b").string(), "art/m/graph.json", false}},
           tar);
  ProcessResult r = RunProcess({"tar", "-x", "-f", tar, "-C", (dir_ / "dst").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Slurp(dir_ / "dst" / "rt-aarch64" / "ember-run"), big);
  EXPECT_EQ(Slurp(dir_ / "dst" / "art" / "m" / "graph.json"), "");
  struct stat st;
  ASSERT_EQ(stat((dir_ / "dst" / "rt-aarch64" / "ember-run").c_str(), &st), 0);
  EXPECT_TRUE(st.st_mode & S_IXUSR);
}

TEST_F(Tar, ReadsWhatGnuTarWritesOfADirectory) {
  std::ofstream(dir_ / "src" / "output_0.npy", std::ios::binary) << std::string(1000, 'x');
  std::ofstream(dir_ / "src" / ".status") << "0\n";
  std::string tar = (dir_ / "y.tar").string();
  ProcessResult r = RunProcess({"tar", "-c", "-f", tar, "-C", (dir_ / "src").string(), "."});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, std::string> files = ReadFlatTar(tar, "test");
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files["output_0.npy"], std::string(1000, 'x'));
  EXPECT_EQ(files[".status"], "0\n");
}

TEST_F(Tar, RefusesMembersOutsideTheDirectory) {
  std::ofstream(dir_ / "src" / "f") << "x";
  std::string tar = (dir_ / "z.tar").string();
  WriteTar({{(dir_ / "src" / "f").string(), "../escape", false}}, tar);
  try {
    ReadFlatTar(tar, "board b: the run's outputs");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("leaves the directory"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("board b"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember::remote
