// RunProcess: argv without a shell, status, both streams, files for stdin and stdout.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "remote/process.h"

namespace ember::remote {
namespace {

TEST(RunProcess, ReturnsStatusAndBothStreams) {
  ProcessResult r = RunProcess({"sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(RunProcess, PassesArgumentsUnparsed) {
  ProcessResult r = RunProcess({"printf", "%s|", "a b", "$(x)", ";"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "a b|$(x)|;|");
}

TEST(RunProcess, StreamsFilesInAndOut) {
  std::string in = testing::TempDir() + "/ember_process_in";
  std::string out = testing::TempDir() + "/ember_process_out";
  std::ofstream(in) << "hello";
  ProcessIo io;
  io.stdin_path = in;
  io.stdout_path = out;
  ProcessResult r = RunProcess({"cat"}, io);
  EXPECT_EQ(r.exit_code, 0);
  std::stringstream got;
  got << std::ifstream(out).rdbuf();
  EXPECT_EQ(got.str(), "hello");
  std::remove(in.c_str());
  std::remove(out.c_str());
}

TEST(RunProcess, NamesAProgramThatIsMissing) {
  try {
    RunProcess({"ember-no-such-program"});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot start ember-no-such-program"), std::string::npos)
        << e.what();
  }
}

TEST(RunProcess, ReportsASignal) {
  EXPECT_EQ(RunProcess({"sh", "-c", "kill -9 $$"}).exit_code, 128 + 9);
}

}  // namespace
}  // namespace ember::remote
