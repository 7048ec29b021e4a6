// Hosts files: the columns, the exec wrapper, comments, and errors naming file and line.
#include <gtest/gtest.h>

#include "remote/hosts_file.h"

namespace ember::remote {
namespace {

TEST(HostsFile, ReadsBoardsAndSkipsComments) {
  std::vector<FleetBoard> b = ParseHostsFile(
      "# name dest target threads\n\npi4-a pi@10.0.0.7 aarch64-linux-gnu 1,4  # desk\n"
      "emu me@127.0.0.1:2222 aarch64-linux-gnu 1 qemu-aarch64 -L /usr/aarch64-linux-gnu\n",
      "lab.txt");
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].name, "pi4-a");
  EXPECT_EQ(b[0].destination, "pi@10.0.0.7");
  EXPECT_EQ(b[0].threads, (std::vector<int>{1, 4}));
  EXPECT_EQ(b[0].exec_wrapper, "");
  EXPECT_EQ(b[1].exec_wrapper, "qemu-aarch64 -L /usr/aarch64-linux-gnu");
}

TEST(HostsFile, ErrorsNameTheFileAndLine) {
  auto message = [](const std::string& text) {
    try {
      ParseHostsFile(text, "lab.txt");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("a b c\n").find("lab.txt:1: expected NAME DESTINATION TARGET THREADS"),
            std::string::npos);
  EXPECT_NE(message("\na h t 1,x\n").find("lab.txt:2: THREADS must be"), std::string::npos);
  EXPECT_NE(message("a h t 1\na h2 t 2\n").find("\"a\" is used twice"), std::string::npos);
  EXPECT_NE(message("# nothing\n").find("no boards listed"), std::string::npos);
}

}  // namespace
}  // namespace ember::remote
