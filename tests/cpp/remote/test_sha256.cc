// SHA-256 against FIPS 180-4's examples and sha256sum.
#include <gtest/gtest.h>

#include <fstream>

#include "remote/process.h"
#include "remote/sha256.h"

namespace ember::remote {
namespace {

TEST(Sha256, MatchesTheStandardsExamples) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileDigestIsWhatSha256sumPrints) {
  std::string path = testing::TempDir() + "/ember_sha256_file";
  std::string data;
  for (int i = 0; i < 200000; ++i) data += static_cast<char>(i * 7);  // spans many read blocks
  std::ofstream(path, std::ios::binary) << data;
  ProcessResult r = RunProcess({"sha256sum", path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Sha256File(path), r.out.substr(0, 64));
  std::remove(path.c_str());
}

TEST(Sha256, NamesAnUnreadableFile) {
  EXPECT_THROW(Sha256File("/nonexistent/ember"), std::runtime_error);
}

}  // namespace
}  // namespace ember::remote
