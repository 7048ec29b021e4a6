// The argv each transport runs: the user's destination and options, nothing loosened, and the
// board's command as one quoted line.
#include <gtest/gtest.h>

#include <algorithm>

#include "remote/adb_transport.h"
#include "remote/board_transport.h"
#include "remote/ssh_transport.h"

namespace ember::remote {
namespace {

TEST(SshDestination, SplitsUserHostAndPort) {
  SshDestination d = SshDestination::Parse("pi@raspberrypi:2222");
  EXPECT_EQ(d.host, "pi@raspberrypi");
  EXPECT_EQ(d.port, "2222");
  EXPECT_EQ(SshDestination::Parse("board").port, "");
}

TEST(SshDestination, TakesIpv6WithAndWithoutAPort) {
  SshDestination d = SshDestination::Parse("pi@[fe80::1]:2222");
  EXPECT_EQ(d.host, "pi@fe80::1");
  EXPECT_EQ(d.port, "2222");
  d = SshDestination::Parse("pi@fe80::1");
  EXPECT_EQ(d.host, "pi@fe80::1");
  EXPECT_EQ(d.port, "");
  EXPECT_EQ(SshDestination::Parse("[::1]").host, "::1");
  EXPECT_THROW(SshDestination::Parse("pi@[::1"), std::invalid_argument);
  EXPECT_THROW(SshDestination::Parse("pi@[::1]x"), std::invalid_argument);
}

TEST(SshDestination, RefusesBadPortsAndOptionLookalikes) {
  EXPECT_THROW(SshDestination::Parse("pi@host:99999"), std::invalid_argument);
  EXPECT_THROW(SshDestination::Parse("pi@host:22x"), std::invalid_argument);
  EXPECT_THROW(SshDestination::Parse("-oProxyCommand=sh"), std::invalid_argument);
  EXPECT_THROW(SshDestination::Parse("@host"), std::invalid_argument);
  try {
    SshDestination::Parse("pi@host:0");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pi@host:0"), std::string::npos) << e.what();
  }
}

TEST(SshTransport, PassesTheUsersOptionsAndNothingElse) {
  SshOptions o;
  o.config_file = "/home/me/cfg";
  o.options = {"UserKnownHostsFile=/tmp/kh"};
  SshTransport t("me@board:2200", o);
  std::vector<std::string> argv = t.SshArgv("uname -m");
  std::vector<std::string> expected = {
      "ssh", "-F",   "/home/me/cfg", "-o",       "UserKnownHostsFile=/tmp/kh",
      "-p",  "2200", "--",           "me@board", "uname -m"};
  EXPECT_EQ(argv, expected);
  for (const std::string& a : argv) EXPECT_EQ(a.find("StrictHostKeyChecking"), std::string::npos);
}

TEST(AdbTransport, RunsAdbForTheSerial) {
  AdbTransport t("R58M123");
  std::vector<std::string> expected = {"adb", "-s", "R58M123", "shell", "ls 'a b'"};
  EXPECT_EQ(t.AdbArgv({"shell", "ls 'a b'"}), expected);
  EXPECT_EQ(t.Name(), "adb:R58M123");
}

TEST(MakeTransport, PicksAdbOrSsh) {
  EXPECT_EQ(MakeTransport("adb:XYZ", {})->Name(), "adb:XYZ");
  EXPECT_EQ(MakeTransport("pi@host", {})->Name(), "pi@host");
  EXPECT_THROW(MakeTransport("adb:", {}), std::invalid_argument);
  EXPECT_EQ(DefaultRemoteDir("adb:XYZ"), "/data/local/tmp/ember-remote");
}

TEST(SshTransport, AFailedConnectionNamesBoardArgvAndSshsMessage) {
  SshOptions o;
  o.options = {"ConnectTimeout=2", "BatchMode=yes"};
  SshTransport t("nobody@127.0.0.1:1", o);  // nothing listens on port 1
  try {
    t.Exec({"true"});
    FAIL() << "expected a TransportError";
  } catch (const TransportError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("nobody@127.0.0.1:1: ssh failed (exit 255)"), std::string::npos) << m;
    EXPECT_NE(m.find("command: ssh -o ConnectTimeout=2"), std::string::npos) << m;
    EXPECT_NE(m.find("onnect"), std::string::npos) << m;  // ssh's "Connection refused"
  }
}

}  // namespace
}  // namespace ember::remote
