// The probe against our own HTTP server with a scripted handler: every
// figure sampled, the stream read to its first token, the download
// counted, and a closed port reported as loss, not a crash.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "http/server.h"
#include "probe/probe_runner.h"

namespace swiftlet::probe {
namespace {

using namespace std::chrono_literals;

class ScriptedServer {
 public:
  ScriptedServer() {
    http::HttpServerOptions o;
    o.port = 0;
    server_ = std::make_unique<http::HttpServer>(
        o, [this](http::HttpRequest r, std::shared_ptr<http::ResponseWriter> w) { Handle(r, std::move(w)); });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~ScriptedServer() { server_->Stop(200ms); }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  bool fail_completions = false;

 private:
  void Handle(const http::HttpRequest& r, std::shared_ptr<http::ResponseWriter> w) {
    if (r.path == "/health") {
      w->Respond(200, {{"Content-Type", "application/json"}}, R"({"status":"ok"})");
    } else if (r.path == "/v1/completions") {
      if (fail_completions) {
        w->Respond(429, {{"Content-Type", "application/json"}}, R"({"error":{"message":"busy"}})");
        return;
      }
      w->StartStream(200, {{"Content-Type", "text/event-stream"}});
      w->WriteEvent(R"({"choices":[{"text":"x","index":0}]})");
      w->WriteEvent("[DONE]");
      w->End();
    } else if (r.path == "/probe/download") {
      const size_t n = std::stoul(r.query.substr(r.query.find('=') + 1));
      w->StartStream(200, {{"Content-Type", "application/octet-stream"}});
      for (size_t sent = 0; sent < n; sent += 65536) w->Write(std::string(std::min<size_t>(65536, n - sent), 'x'));
      w->End();
    } else {
      w->Respond(404, {}, "");
    }
  }
  std::unique_ptr<http::HttpServer> server_;
};

ProbeOptions Fast() {
  ProbeOptions o;
  o.samples = 5;
  o.interval_ns = 0;
  o.timeout_ns = 2'000'000'000;
  return o;
}

TEST(Probe, MeasuresEveryFigure) {
  ScriptedServer server;
  ProbeOptions o = Fast();
  o.download_mb = 2;
  const TargetResult r = ProbeTarget(*ParseTarget(server.url()), o);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.connect.values_ms.size(), 5u);
  EXPECT_EQ(r.ttfb.values_ms.size(), 5u) << r.ttfb.last_error;
  EXPECT_EQ(r.ttft.values_ms.size(), 5u) << r.ttft.last_error;
  for (size_t i = 0; i < 5; ++i) EXPECT_GE(r.ttfb.values_ms[i], r.connect.values_ms[i]);
  ASSERT_TRUE(r.download.has_value());
  EXPECT_TRUE(r.download->error.empty()) << r.download->error;
  EXPECT_EQ(r.download->bytes, 2u << 20);
}

TEST(Probe, RefusalsAreLoss) {
  ScriptedServer server;
  server.fail_completions = true;
  const TargetResult r = ProbeTarget(*ParseTarget(server.url()), Fast());
  EXPECT_EQ(r.ttft.values_ms.size(), 0u);
  EXPECT_EQ(r.ttft.attempts, 5);
  EXPECT_NE(r.ttft.last_error.find("429"), std::string::npos);
}

TEST(Probe, AClosedPortIsAllLoss) {
  int port = 0;
  {
    ScriptedServer gone;  // Take a port nobody listens on once it stops.
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  ProbeOptions o = Fast();
  o.download_mb = 1;
  const TargetResult r = ProbeTarget(*ParseTarget("http://127.0.0.1:" + std::to_string(port)), o);
  EXPECT_EQ(r.connect.attempts, 5);
  EXPECT_TRUE(r.connect.values_ms.empty());
  EXPECT_FALSE(r.connect.last_error.empty());
  ASSERT_TRUE(r.download.has_value());
  EXPECT_FALSE(r.download->error.empty());
}

TEST(Probe, HttpsSaysItIsNotThereYet) {
  const TargetResult r = ProbeTarget(*ParseTarget("https://127.0.0.1:1"), Fast());
  EXPECT_NE(r.error.find("issue 24"), std::string::npos);
}

}  // namespace
}  // namespace swiftlet::probe
