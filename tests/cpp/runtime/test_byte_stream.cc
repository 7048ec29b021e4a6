#include <ember/runtime/byte_stream.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ember::runtime {
namespace {

TEST(ByteStream, RoundTripInDmlcEncoding) {
  std::string buf;
  ByteWriter w(&buf);
  w.Write<uint32_t>(7);
  w.WriteString("abc");
  w.WriteVector(std::vector<int64_t>{1, -2});
  w.WriteStringVector({"x", ""});
  EXPECT_EQ(buf.size(), 4u + (8 + 3) + (8 + 16) + (8 + 9 + 8));
  ByteReader r(buf.data(), buf.size(), "buf");
  EXPECT_EQ(r.Read<uint32_t>("u32"), 7u);
  EXPECT_EQ(r.ReadString("s"), "abc");
  EXPECT_EQ(r.ReadVector<int64_t>("v"), (std::vector<int64_t>{1, -2}));
  EXPECT_EQ(r.ReadStringVector("sv"), (std::vector<std::string>{"x", ""}));
  EXPECT_EQ(r.remaining(), 0u);
}

TEST(ByteStream, ShortReadsNameSourceAndField) {
  std::string buf;
  ByteWriter w(&buf);
  w.Write<uint64_t>(uint64_t{1} << 62);  // a length far beyond the data
  ByteReader r(buf.data(), buf.size(), "graph blob");
  try {
    r.ReadString("graph json");
    FAIL();
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("graph blob: truncated data reading graph json"), std::string::npos) << msg;
  }
  ByteReader r2(buf.data(), buf.size(), "b");
  EXPECT_THROW(r2.ReadVector<int64_t>("v"), Error);
  ByteReader r3(buf.data(), 3, "b");
  EXPECT_THROW(r3.Read<uint32_t>("u32"), Error);
  ByteReader r4(buf.data(), buf.size(), "b");
  EXPECT_THROW(r4.ReadStringVector("names"), Error);
}

}  // namespace
}  // namespace ember::runtime
