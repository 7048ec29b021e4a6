// ShellQuote: every string survives a real POSIX shell unchanged.
#include <gtest/gtest.h>

#include "remote/process.h"
#include "remote/shell_quote.h"

namespace ember::remote {
namespace {

TEST(ShellQuote, PlainWordsStayAsTheyAre) {
  EXPECT_EQ(ShellQuote("ember-run"), "ember-run");
  EXPECT_EQ(ShellQuote("/tmp/a_b/c.npy"), "/tmp/a_b/c.npy");
  EXPECT_EQ(ShellQuote("input=x.npy"), "input=x.npy");
}

TEST(ShellQuote, EverythingElseIsSingleQuoted) {
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote("$(reboot)"), "'$(reboot)'");
  EXPECT_EQ(ShellQuote("~/x"), "'~/x'");
}

TEST(ShellQuote, RoundTripsThroughSh) {
  const std::vector<std::string> nasty = {
      "",     " ",           "a b", "it's",  "'",
      "''",   "\"",          "\\",  "$HOME", "$(touch /tmp/ember_pwned)",
      "`id`", "a;b",         "a|b", "a&&b",  "*",
      "?",    "[a]",         "~",   "-n",    "--",
      "x\ny", "\t",          "!",   "#c",    "{a,b}",
      "é ü",  "a'\"b\\c$d`e"};
  std::string script = "printf '%s\\0'";
  for (const std::string& s : nasty) script += " " + ShellQuote(s);
  ProcessResult r = RunProcess({"sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string expected;
  for (const std::string& s : nasty) expected += s + '\0';
  EXPECT_EQ(r.out, expected);
}

TEST(ShellQuote, JoinQuotesEachWord) {
  EXPECT_EQ(ShellJoin({"ls", "-l", "my file"}), "ls -l 'my file'");
}

}  // namespace
}  // namespace ember::remote
