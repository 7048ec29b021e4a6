// Board CPU names from /proc/cpuinfo, ELF architectures and the runtime cache.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "remote/board_arch.h"
#include "remote/board_cpu.h"

namespace ember::remote {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPi4 =
    "processor\t: 0\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm crc32 cpuid\n"
    "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x0\nCPU part\t: 0xd08\n"
    "CPU revision\t: 3\n\nprocessor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd08\n\n"
    "Hardware\t: BCM2835\nRevision\t: c03111\nSerial\t\t: 10000000abcdef01\n"
    "Model\t\t: Raspberry Pi 4 Model B Rev 1.1\n";

TEST(BoardCpuName, NamesAnArmCoreByItsIds) {
  EXPECT_EQ(BoardCpuName(kPi4), "impl=0x41 arch=8 var=0x0 part=0xd08 rev=3");
}

TEST(BoardCpuName, TwoBoardsWithOneCpuShareTheName) {
  std::string other = kPi4;
  other.replace(other.find("10000000abcdef01"), 16, "1000000012345678");  // another serial
  EXPECT_EQ(BoardCpuName(other), BoardCpuName(kPi4));
}

TEST(BoardCpuName, NamesAnX86ByModelName) {
  EXPECT_EQ(BoardCpuName("processor\t: 0\nmodel name\t: AMD EPYC  7B13 64-Core Processor\n"
                         "processor\t: 1\nmodel name\t: something else\n"),
            "AMD EPYC 7B13 64-Core Processor");
  EXPECT_EQ(BoardCpuName("nothing here\n"), "");
}

// The architecture this test binary is built for (the ARM stage runs it under qemu-user), and one
// no runtime is built for in the test below.
#if defined(__x86_64__)
constexpr const char* kThisArch = "x86_64";
#elif defined(__aarch64__)
constexpr const char* kThisArch = "aarch64";
#else
constexpr const char* kThisArch = "armhf";
#endif
const std::string kOtherArch = std::string(kThisArch) == "aarch64" ? "x86_64" : "aarch64";

TEST(ElfArch, ReadsTheMachine) {
  EXPECT_EQ(ElfArch("/proc/self/exe"), kThisArch);
  std::string text = testing::TempDir() + "/ember_not_elf";
  std::ofstream(text) << "#!/bin/sh\n";
  try {
    ElfArch(text);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("is not an ELF file"), std::string::npos);
  }
}

TEST(RuntimeSearchDirs, FlagsFirstThenTheEnvironment) {
  setenv("EMBER_RUNTIME_DIRS", "/a::/b", 1);
  EXPECT_EQ(RuntimeSearchDirs({"/flag"}), (std::vector<std::string>{"/flag", "/a", "/b"}));
  unsetenv("EMBER_RUNTIME_DIRS");
  EXPECT_EQ(RuntimeSearchDirs({"/flag"}), (std::vector<std::string>{"/flag"}));
}

TEST(FindBoardRuntime, FindsACrossBuildTreeAndListsWhereItLooked) {
  fs::path root = fs::path(testing::TempDir()) / "ember_runtimes";
  fs::remove_all(root);
  const fs::path tree = root / (std::string("cross-") + kThisArch);
  fs::create_directories(tree / "bin");
  fs::create_directories(tree / "lib");
  // This binary's ELF header stands for the board's ember-run (read, not copied: qemu-user
  // cannot copy_file its emulated /proc/self/exe).
  std::string header(64, '\0');
  std::ifstream("/proc/self/exe", std::ios::binary).read(&header[0], 64);
  std::ofstream(tree / "bin" / "ember-run", std::ios::binary) << header;
  std::ofstream(tree / "lib" / "libember_runtime.so.0") << "x";
  std::ofstream(tree / "lib" / "libember_runtime.so.0.1.0") << "x";
  BoardRuntime rt = FindBoardRuntime(kThisArch, {root.string()}, "");
  EXPECT_EQ(rt.soname, "libember_runtime.so.0");
  EXPECT_EQ(rt.ember_run, (tree / "bin" / "ember-run").string());
  try {
    FindBoardRuntime(kOtherArch, {root.string()}, "");
    FAIL();
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("no ember-run built for " + kOtherArch), std::string::npos) << m;
    EXPECT_NE(m.find((root / ("cross-" + kOtherArch)).string()), std::string::npos) << m;
    EXPECT_NE(m.find("--runtime-dir"), std::string::npos) << m;
  }
  fs::remove_all(root);
}

}  // namespace
}  // namespace ember::remote
