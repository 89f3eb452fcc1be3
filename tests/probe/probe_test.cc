#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "probe/http_exchange.h"
#include "probe/probe_report.h"
#include "probe/probe_runner.h"
#include "probe/sample_stats.h"
#include "probe/target.h"

namespace swiftlet::probe {
namespace {

TEST(Target, Parses) {
  auto t = ParseTarget("http://127.0.0.1:8080/v1/");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->url, "http://127.0.0.1:8080");
  EXPECT_EQ(t->port, 8080);
  auto s = ParseTarget("https://example.com");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->scheme, Scheme::kHttps);
  EXPECT_EQ(s->port, 443);
  auto v6 = ParseTarget("http://[::1]:9");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  for (const char* bad : {"", "127.0.0.1:80", "http://", "http://h:0", "http://h:99999", "http://h/x",
                          "http://u@h", "http://[::1", "http://::1:80", "http://h:", "http://h h"}) {
    EXPECT_FALSE(ParseTarget(bad).ok()) << bad;
  }
}

TEST(SampleStats, PercentilesInterpolate) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 50.5);
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1);
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 100);
  EXPECT_NEAR(Percentile(v, 99), 99.01, 1e-9);
  EXPECT_DOUBLE_EQ(Percentile({7}, 95), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 50), 0);
}

TEST(SampleStats, JitterIsTheSpreadOfConsecutiveDifferences) {
  Samples s;
  // Differences +2, -2, +2, -2: mean 0, sample stdev sqrt(16/3).
  for (double x : {10.0, 12.0, 10.0, 12.0, 10.0}) s.Add(x);
  s.Fail("timeout");
  const Summary sum = Summarize(s);
  EXPECT_EQ(sum.n, 5u);
  EXPECT_EQ(sum.attempts, 6);
  EXPECT_NEAR(sum.jitter, std::sqrt(16.0 / 3.0), 1e-9);
  EXPECT_NEAR(sum.loss_pct, 100.0 / 6.0, 1e-9);
  EXPECT_DOUBLE_EQ(sum.min, 10);
  EXPECT_DOUBLE_EQ(sum.max, 12);
  // A steady link, however slow, has no jitter.
  Samples steady;
  for (int i = 0; i < 5; ++i) steady.Add(80 + i);
  EXPECT_NEAR(Summarize(steady).jitter, 0, 1e-9);
}

TEST(SampleStats, NothingMeasured) {
  Samples s;
  s.Fail("refused");
  s.Fail("refused");
  const Summary sum = Summarize(s);
  EXPECT_EQ(sum.n, 0u);
  EXPECT_DOUBLE_EQ(sum.loss_pct, 100);
}

TEST(ResponseHead, Parses) {
  auto h = ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked");
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->status, 200);
  EXPECT_TRUE(h->chunked);
  auto l = ParseResponseHead("HTTP/1.0 404 Not Found\r\nContent-Length: 12");
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->status, 404);
  EXPECT_EQ(l->content_length, 12u);
  for (const char* bad : {"", "HTTP/2 200", "HTTP/1.1 2000 x", "HTTP/1.1 abc", "SSH-2.0", "HTTP/1.1 200 OK\r\nno colon",
                          "HTTP/1.1 200 OK\r\nContent-Length: -1", "HTTP/1.1 099 x"}) {
    EXPECT_FALSE(ParseResponseHead(bad).ok()) << bad;
  }
}

TEST(Sizing, TheSeedsRule) {
  EXPECT_DOUBLE_EQ(TransferSeconds(1, 8000), 1);
  EXPECT_DOUBLE_EQ(TransferSeconds(10, 1000), 80);
  EXPECT_DOUBLE_EQ(TransferSeconds(10, 0), 0);
}

TEST(Report, JsonCarriesEveryFigure) {
  TargetResult r;
  r.target = *ParseTarget("http://127.0.0.1:1");
  for (double x : {1.0, 2.0, 3.0}) r.connect.Add(x);
  r.ttfb.Add(5);
  r.ttfb.Fail("timeout");
  r.download = DownloadResult{1 << 20, 0.5, 16.7, ""};
  ProbeOptions o;
  o.samples = 3;
  auto j = nlohmann::json::parse(FormatJson({r}, o));
  const auto& t = j["targets"][0];
  EXPECT_EQ(t["url"], "http://127.0.0.1:1");
  EXPECT_EQ(t["connect"]["p50"], 2);
  EXPECT_EQ(t["ttfb"]["loss_pct"], 50);
  EXPECT_TRUE(t["tls"].is_null());
  EXPECT_DOUBLE_EQ(t["download"]["sizing"]["10GB_seconds"].get<double>(), 10 * 8000 / 16.7);
  const std::string text = FormatText({r}, o);
  EXPECT_NE(text.find("GB x 8000 / Mbps"), std::string::npos) << text;
  EXPECT_NE(text.find("connect"), std::string::npos);
}

}  // namespace
}  // namespace swiftlet::probe
