#include "http/sse_parser.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "http/wire_format.h"

namespace swiftlet::http {
namespace {

// Every line ending, a comment, a multi-line event, an event type, an id
// that persists, a field without a colon, a BOM, and a trailing event that
// never ends.
const std::string kStream =
    "\xEF\xBB\xBF"
    ": keep-alive comment\r\n"
    "data: one\r\n"
    "\r\n"
    "event: e2\n"
    "data: two\n"
    "data:  line2\n"
    "\n"
    "id: 7\r"
    "data:three\r"
    "\r"
    "data\n"
    "\n"
    "retry: 10\n"
    "data: {\"x\":1}\r\n"
    "\r\n"
    "event: only-a-type\n"
    "\n"
    "data: never finished";

// Written by hand from the SSE spec, not from the parser.
const std::vector<SseEvent> kExpected = {
    {"", "one", ""},
    {"e2", "two\n line2", ""},
    {"", "three", "7"},
    {"", "", "7"},
    {"", "{\"x\":1}", "7"},
};

std::vector<SseEvent> ParsePieces(const std::vector<std::string_view>& pieces) {
  SseParser parser;
  std::vector<SseEvent> events;
  for (std::string_view piece : pieces) {
    absl::Status s = parser.Feed(piece, [&](const SseEvent& e) { events.push_back(e); });
    EXPECT_TRUE(s.ok()) << s;
  }
  return events;
}

TEST(SseParserTest, WholeStream) { EXPECT_EQ(ParsePieces({kStream}), kExpected); }

TEST(SseParserTest, EverySplitInTwoAndThree) {
  std::string_view s = kStream;
  for (size_t i = 0; i <= s.size(); ++i) {
    ASSERT_EQ(ParsePieces({s.substr(0, i), s.substr(i)}), kExpected) << "split at " << i;
  }
  for (size_t i = 0; i <= s.size(); ++i) {
    for (size_t j = i; j <= s.size(); ++j) {
      ASSERT_EQ(ParsePieces({s.substr(0, i), s.substr(i, j - i), s.substr(j)}), kExpected)
          << "splits at " << i << ", " << j;
    }
  }
}

TEST(SseParserTest, ByteByByte) {
  std::vector<std::string_view> bytes;
  std::string_view s = kStream;
  for (size_t i = 0; i < s.size(); ++i) bytes.push_back(s.substr(i, 1));
  EXPECT_EQ(ParsePieces(bytes), kExpected);
}

TEST(SseParserTest, NotQuiteABomIsKept) {
  EXPECT_EQ(ParsePieces({"\xEF\xBB", "data: x\n\n"}),
            (std::vector<SseEvent>{}));  // "\xEF\xBBdata" is an unknown field.
  EXPECT_EQ(ParsePieces({"\xEF", "data: x\n\n", "data: y\n\n"}),
            (std::vector<SseEvent>{{"", "y", ""}}));
}

TEST(SseParserTest, FramedEventsReadBack) {
  std::vector<std::string> payloads = {"{\"a\":1}", "two\nlines", "", "[DONE]", "x\r\ny\rz"};
  std::string stream;
  for (const std::string& p : payloads) stream += FrameSseEvent(p);
  std::vector<SseEvent> events = ParsePieces({stream});
  ASSERT_EQ(events.size(), payloads.size());
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].data, "two\nlines");
  EXPECT_EQ(events[2].data, "");
  EXPECT_EQ(events[3].data, "[DONE]");
  EXPECT_EQ(events[4].data, "x\ny\nz");  // Line ends normalize to \n.
}

TEST(SseParserTest, OversizedEventFailsAndStaysFailed) {
  SseParser parser(64);
  int events = 0;
  auto count = [&](const SseEvent&) { ++events; };
  EXPECT_TRUE(parser.Feed("data: short\n\n", count).ok());
  EXPECT_EQ(events, 1);
  // Many small data lines add up past the limit without any blank line.
  absl::Status s;
  for (int i = 0; i < 20 && s.ok(); ++i) s = parser.Feed("data: 0123456789\n", count);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(parser.Feed("\n", count).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(events, 1);
  // One endless line too.
  SseParser line_parser(64);
  EXPECT_EQ(line_parser.Feed(std::string(100, 'x'), count).code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace swiftlet::http
