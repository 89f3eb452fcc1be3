#include "gateway/forwarding.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "gateway/affinity.h"
#include "gateway/health_poller.h"

namespace swiftlet::gateway {
namespace {

TEST(Forwarding, RequestLosesHopByHopFieldsAndGainsForwardedFor) {
  http::HttpRequest r;
  r.remote_address = "10.1.2.3:5555";
  r.headers = http::Headers{{"Host", "gw:8090"},
                            {"Connection", "keep-alive, X-Secret-Hop"},
                            {"X-Secret-Hop", "1"},
                            {"Keep-Alive", "timeout=5"},
                            {"Transfer-Encoding", "chunked"},
                            {"Content-Length", "12"},
                            {"Expect", "100-continue"},
                            {"Authorization", "Bearer k"},
                            {"X-Forwarded-For", "1.1.1.1"},
                            {"Content-Type", "application/json"}};
  http::Headers h = UpstreamRequestHeaders(r);
  for (const char* gone : {"host", "connection", "x-secret-hop", "keep-alive", "transfer-encoding",
                           "content-length", "expect"}) {
    EXPECT_FALSE(h.Has(gone)) << gone;
  }
  EXPECT_EQ(h.Get("authorization"), "Bearer k");
  EXPECT_EQ(h.Get("content-type"), "application/json");
  EXPECT_EQ(h.Get("x-forwarded-for"), "1.1.1.1, 10.1.2.3");
}

TEST(Forwarding, UpgradeDropsTheHandshakeFields) {
  http::HttpRequest r;
  r.remote_address = "[::1]:5555";
  r.headers = http::Headers{{"Upgrade", "websocket"},          {"Connection", "Upgrade"},
                            {"Sec-WebSocket-Key", "abc"},      {"Sec-WebSocket-Version", "13"},
                            {"Origin", "https://app.example"}, {"Authorization", "Bearer k"}};
  http::Headers h = UpstreamUpgradeHeaders(r);
  EXPECT_FALSE(h.Has("upgrade"));
  EXPECT_FALSE(h.Has("sec-websocket-key"));
  EXPECT_FALSE(h.Has("sec-websocket-version"));
  EXPECT_EQ(h.Get("origin"), "https://app.example");
  EXPECT_EQ(h.Get("x-forwarded-for"), "::1");
}

TEST(Forwarding, ResponseGetsTheSiteHeaderOnce) {
  http::Headers up{{"Content-Type", "text/event-stream"},
                   {"Content-Length", "5"},
                   {"Connection", "close"},
                   {"x-swiftlet-site", "inner"},
                   {"x-request-id", "r1"}};
  http::Headers h = DownstreamResponseHeaders(up, "hk");
  EXPECT_EQ(h.Get("x-swiftlet-site"), "hk");
  size_t count = 0;
  for (const auto& [n, v] : h.fields()) count += http::EqualsIgnoreCase(n, "x-swiftlet-site");
  EXPECT_EQ(count, 1u);
  EXPECT_FALSE(h.Has("content-length"));
  EXPECT_FALSE(h.Has("connection"));
  EXPECT_EQ(h.Get("x-request-id"), "r1");
}

TEST(Forwarding, RetryAfter) {
  EXPECT_EQ(RetryAfterNs(http::Headers{{"Retry-After", "2"}, {"retry-after-ms", "1500"}}), 1'500'000'000);
  EXPECT_EQ(RetryAfterNs(http::Headers{{"Retry-After", "3"}}), 3'000'000'000);
  EXPECT_EQ(RetryAfterNs(http::Headers{{"Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"}}), 1'000'000'000);
  EXPECT_EQ(RetryAfterNs(http::Headers{{"Retry-After", "99999999999999999999"}}), 1'000'000'000);
  EXPECT_EQ(RetryAfterNs(http::Headers{{"retry-after-ms", "-5"}, {"Retry-After", "1"}}), 1'000'000'000);
  EXPECT_FALSE(RetryAfterNs(http::Headers{}).has_value());
}

TEST(Forwarding, StreamIdFromBodyTakesOnlyTheTopLevelString) {
  EXPECT_EQ(StreamIdFromBody(R"({"texts":["a"],"stream_id":"live-42"})"), "live-42");
  EXPECT_FALSE(StreamIdFromBody(R"({"x":{"stream_id":"inner"}})").has_value());
  EXPECT_FALSE(StreamIdFromBody(R"({"stream_id":7})").has_value());
  EXPECT_FALSE(StreamIdFromBody(R"({"stream_id":""})").has_value());
  EXPECT_FALSE(StreamIdFromBody(R"(["stream_id","x"])").has_value());
  (void)StreamIdFromBody(R"({"stream_id":"x")");  // Truncated: whatever it finds, no crash.
  EXPECT_FALSE(StreamIdFromBody(R"({"stream_id")").has_value());
  EXPECT_FALSE(StreamIdFromBody(R"({"messages":[]})").has_value());
  const std::string long_id(kMaxStreamIdBytes + 1, 'x');
  EXPECT_FALSE(StreamIdFromBody(R"({"stream_id":")" + long_id + "\"}").has_value());
  // Deep nesting is refused without recursion.
  const std::string deep = R"({"stream_id":"s","a":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(StreamIdFromBody(deep), "s");
  const std::string deep_first = R"({"a":)" + std::string(100000, '[') + std::string(100000, ']') + R"(,"stream_id":"s"})";
  EXPECT_FALSE(StreamIdFromBody(deep_first).has_value());
}

TEST(Forwarding, StreamIdFromQuery) {
  EXPECT_EQ(StreamIdFromQuery("languages=en,ja&stream_id=s%2F1"), "s/1");
  EXPECT_EQ(StreamIdFromQuery("stream_id=a+b"), "a b");
  EXPECT_FALSE(StreamIdFromQuery("languages=en").has_value());
  EXPECT_FALSE(StreamIdFromQuery("stream_id=").has_value());
  EXPECT_FALSE(StreamIdFromQuery("stream_id=%zz").has_value());
  EXPECT_FALSE(StreamIdFromQuery("stream_id=%4").has_value());
  EXPECT_FALSE(StreamIdFromQuery("stream_id=" + std::string(1000, 'x')).has_value());
}

TEST(Forwarding, ErrorsAreOpenAiShaped) {
  auto j = nlohmann::json::parse(ErrorJson(503, "no site", "no_site_available"));
  EXPECT_EQ(j["error"]["message"], "no site");
  EXPECT_EQ(j["error"]["code"], "no_site_available");
  EXPECT_TRUE(j["error"].contains("type"));
  auto e = nlohmann::json::parse(StreamErrorEventData("broke"));
  EXPECT_EQ(e["error"]["code"], "upstream_lost");
}

TEST(ParseLoad, ReadsTheWaitAndBoundsIt) {
  auto l = ParseLoad(R"({"waiting":0,"estimated_wait_ms":12.5,"draining":false})");
  ASSERT_TRUE(l.ok());
  EXPECT_DOUBLE_EQ(l->wait_ms, 12.5);
  EXPECT_FALSE(l->draining);
  EXPECT_TRUE(ParseLoad(R"({"estimated_wait_ms":1,"draining":true})")->draining);
  EXPECT_DOUBLE_EQ(ParseLoad(R"({"estimated_wait_ms":-4})")->wait_ms, 0);
  EXPECT_DOUBLE_EQ(ParseLoad(R"({"estimated_wait_ms":1e300})")->wait_ms, 3'600'000);
  EXPECT_FALSE(ParseLoad("[]").ok());
  EXPECT_FALSE(ParseLoad("{").ok());
  EXPECT_FALSE(ParseLoad(R"({"estimated_wait_ms":"5"})").ok());
}

}  // namespace
}  // namespace swiftlet::gateway
