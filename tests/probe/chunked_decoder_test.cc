#include "probe/chunked_decoder.h"

#include <string>

#include <gtest/gtest.h>

namespace swiftlet::probe {
namespace {

// Feeds `wire` split every `step` bytes; returns the body, or the error.
absl::StatusOr<std::string> Decode(const std::string& wire, size_t step, bool* done = nullptr) {
  ChunkedDecoder d;
  std::string body;
  for (size_t at = 0; at < wire.size(); at += step) {
    absl::Status s = d.Feed(std::string_view(wire).substr(at, step), [&](std::string_view b) { body.append(b); });
    if (!s.ok()) return s;
  }
  if (done != nullptr) *done = d.done();
  return body;
}

TEST(ChunkedDecoder, DecodesInAnySplit) {
  const std::string wire = "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\nignored";
  for (size_t step = 1; step <= wire.size(); ++step) {
    bool done = false;
    auto body = Decode(wire, step, &done);
    ASSERT_TRUE(body.ok()) << step << " " << body.status();
    EXPECT_EQ(*body, "hello, world") << step;
    EXPECT_TRUE(done) << step;
  }
}

TEST(ChunkedDecoder, BareLfAndUppercaseHex) {
  bool done = false;
  auto body = Decode("A\nabcdefghij\n0\n\n", 3, &done);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "abcdefghij");
  EXPECT_TRUE(done);
}

TEST(ChunkedDecoder, NotDoneUntilTheLastChunk) {
  bool done = true;
  auto body = Decode("3\r\nabc\r\n", 100, &done);
  ASSERT_TRUE(body.ok());
  EXPECT_FALSE(done);
}

TEST(ChunkedDecoder, RejectsMalformedFraming) {
  EXPECT_FALSE(Decode("zz\r\n", 100).ok());
  EXPECT_FALSE(Decode("\r\n", 100).ok());
  EXPECT_FALSE(Decode("3\r\nabcX\r\n", 100).ok());            // No CRLF after data.
  EXPECT_FALSE(Decode("fffffffffffffffff\r\n", 100).ok());    // Past 2^40.
  EXPECT_FALSE(Decode(std::string(5000, '1'), 100).ok());      // A size line without end.
  std::string trailers = "0\r\n";
  for (int i = 0; i < 1000; ++i) trailers += "X-T: " + std::string(40, 'v') + "\r\n";
  EXPECT_FALSE(Decode(trailers, 100).ok());
}

TEST(ChunkedDecoder, AnErrorSticks) {
  ChunkedDecoder d;
  auto sink = [](std::string_view) {};
  EXPECT_FALSE(d.Feed("q\r\n", sink).ok());
  EXPECT_FALSE(d.Feed("0\r\n\r\n", sink).ok());
}

}  // namespace
}  // namespace swiftlet::probe
