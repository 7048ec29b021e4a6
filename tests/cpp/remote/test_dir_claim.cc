// Claims on board directories: only a claim of this machine, this boot and a process that is gone
// may be taken over.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>

#include "remote/dir_claim.h"

namespace ember::remote {
namespace {

// This process's claim with another pid in it.
std::string ClaimOfPid(pid_t pid) {
  std::istringstream in(ThisProcessClaim());
  std::string host, self, boot;
  in >> host >> self >> boot;
  return host + " " + std::to_string(pid) + " " + boot;
}

pid_t AnExitedPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

TEST(DirClaim, ALiveProcessOfThisMachineHoldsItsClaim) {
  EXPECT_FALSE(ClaimIsStale(ThisProcessClaim()));
  EXPECT_FALSE(ClaimIsStale(ClaimOfPid(getppid())));
}

TEST(DirClaim, AProcessOfThisMachineThatIsGoneLeftAStaleClaim) {
  EXPECT_TRUE(ClaimIsStale(ClaimOfPid(AnExitedPid())));
}

TEST(DirClaim, AnotherMachinesOrBootsClaimIsNeverStale) {
  std::istringstream in(ClaimOfPid(AnExitedPid()));
  std::string host, pid, boot;
  in >> host >> pid >> boot;
  EXPECT_FALSE(ClaimIsStale("other-" + host + " " + pid + " " + boot));
  EXPECT_FALSE(ClaimIsStale(host + " " + pid + " another-boot"));
  EXPECT_FALSE(ClaimIsStale(host + " " + pid + " -"));
}

TEST(DirClaim, AnOddClaimIsNotStaleAndIsDescribedAsUnnamed) {
  for (const char* odd : {"", "host", "host x boot", "host 0 boot", "host 12 boot extra"}) {
    EXPECT_FALSE(ClaimIsStale(odd)) << odd;
    EXPECT_EQ(DescribeClaim(odd), "an unnamed session") << odd;
  }
  EXPECT_EQ(DescribeClaim("pi4 1234 abc"), "pi4 pid 1234");
}

}  // namespace
}  // namespace ember::remote
