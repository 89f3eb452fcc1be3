#include "http/wire_format.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace swiftlet::http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(WireFormatTest, Chunks) {
  std::string out;
  AppendChunk(out, "hello");
  EXPECT_EQ(out, "5\r\nhello\r\n");
  out.clear();
  AppendChunk(out, "");
  EXPECT_EQ(out, "");
  AppendChunk(out, std::string(300, 'x'));
  EXPECT_EQ(out.substr(0, 5), "12c\r\n");  // 300 = 0x12c
  EXPECT_EQ(out.size(), 5 + 300 + 2u);
  EXPECT_EQ(kLastChunk, "0\r\n\r\n");
}

TEST(WireFormatTest, SseFraming) {
  EXPECT_EQ(FrameSseEvent("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(FrameSseEvent("a\nb"), "data: a\ndata: b\n\n");
  EXPECT_EQ(FrameSseEvent("a\r\nb\rc"), "data: a\ndata: b\ndata: c\n\n");
  EXPECT_EQ(FrameSseEvent(""), "data: \n\n");
  EXPECT_EQ(FrameSseEvent("end\n"), "data: end\ndata: \n\n");
}

TEST(WireFormatTest, ResponseHead) {
  Headers h{{"Content-Type", "text/plain"},
            {"X-Evil", "a\r\nSet-Cookie: x=1"},
            {"Bad Name", "v"},
            {"content-length", "999"},
            {"Connection", "keep-alive"},
            {"X-Ok", "fine"}};
  std::string head = SerializeResponseHead(200, h, 5, false, true);
  EXPECT_EQ(head, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Ok: fine\r\n"
                  "Content-Length: 5\r\n\r\n");
  std::string stream = SerializeResponseHead(429, {}, std::nullopt, true, false);
  EXPECT_EQ(stream, "HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\n"
                    "Connection: close\r\n\r\n");
  EXPECT_THAT(SerializeResponseHead(299, {}, 0, false, true), HasSubstr("299 Unknown"));
}

TEST(WireFormatTest, ErrorResponse) {
  const std::string body = "{\"e\":1}";
  EXPECT_EQ(SerializeErrorResponse(413, ErrorBody{"application/json", body}),
            "HTTP/1.1 413 Content Too Large\r\nContent-Type: application/json\r\n"
            "Content-Length: 7\r\nConnection: close\r\n\r\n" + body);
  // The transport's default knows no API: the message as text.
  const ErrorBody plain = PlainErrorBody(503, "too many connections");
  EXPECT_EQ(plain.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(plain.body, "too many connections\n");
}

TEST(WireFormatTest, RequestHead) {
  std::string post = SerializeRequestHead("POST", "/v1/completions", "h:1",
                                          Headers{{"Content-Type", "application/json"}}, 12);
  EXPECT_EQ(post, "POST /v1/completions HTTP/1.1\r\nHost: h:1\r\n"
                  "Content-Type: application/json\r\nContent-Length: 12\r\n\r\n");
  std::string get = SerializeRequestHead("GET", "/health", "h:1", Headers{{"host", "other"}}, 0);
  EXPECT_EQ(get, "GET /health HTTP/1.1\r\nhost: other\r\n\r\n");
  EXPECT_THAT(SerializeRequestHead("POST", "/", "h", {}, 0), HasSubstr("Content-Length: 0"));
  EXPECT_THAT(get, Not(HasSubstr("Content-Length")));
}

TEST(HeadersTest, CaseInsensitive) {
  Headers h;
  h.Add("Content-Type", "a");
  h.Add("X-Multi", "1");
  h.Add("x-multi", "2");
  EXPECT_EQ(h.Get("content-type"), "a");
  EXPECT_EQ(h.Get("CONTENT-TYPE"), "a");
  EXPECT_EQ(h.Get("x-MULTI"), "1");
  EXPECT_FALSE(h.Get("content-typ").has_value());
  h.Set("X-MULTI", "3");
  EXPECT_EQ(h.size(), 2u);
  EXPECT_EQ(h.Get("x-multi"), "3");
  h.Remove("CONTENT-type");
  EXPECT_FALSE(h.Has("content-type"));
}

}  // namespace
}  // namespace swiftlet::http
