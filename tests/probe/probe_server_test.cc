// The probe against our own HTTP server with a scripted handler: every
// figure sampled, the stream read to its first token, the download
// counted, and a closed port reported as loss, not a crash; over https the
// handshake timed apart, and a certificate that does not verify reported
// as lost handshakes.
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include <sys/socket.h>

#include <gtest/gtest.h>

#include "http/server.h"
#include "http/test_pki.h"
#include "probe/probe_runner.h"
#include "probe/transport.h"

namespace swiftlet::probe {
namespace {

using namespace std::chrono_literals;

class ScriptedServer {
 public:
  explicit ScriptedServer(http::TlsServerOptions tls = {}, std::string host = "127.0.0.1") : host_(std::move(host)) {
    http::HttpServerOptions o;
    o.host = host_;
    o.port = 0;
    o.tls = tls;
    server_ = std::make_unique<http::HttpServer>(
        o, [this](http::HttpRequest r, std::shared_ptr<http::ResponseWriter> w) { Handle(r, std::move(w)); });
    const absl::Status started = server_->Start();
    EXPECT_TRUE(started.ok()) << started;
    tls_ = tls.enabled();
  }
  ~ScriptedServer() { server_->Stop(200ms); }
  std::string url() const {
    return std::string(tls_ ? "https" : "http") + "://" + host_ + ":" + std::to_string(server_->port());
  }
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
  const std::string host_;
  std::unique_ptr<http::HttpServer> server_;
  bool tls_ = false;
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

class ProbeTls : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pki = http::testing::TestPki::Create();
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = std::make_unique<http::testing::TestPki>(*std::move(pki));
    auto cert = pki_->IssueServerCert("server", "1001");
    ASSERT_TRUE(cert.ok()) << cert.status();
    tls_.cert_file = cert->cert;
    tls_.key_file = cert->key;
  }
  std::unique_ptr<http::testing::TestPki> pki_;
  http::TlsServerOptions tls_;
};

TEST_F(ProbeTls, TimesTheHandshakeApartFromTheConnect) {
  ScriptedServer server(tls_);
  ProbeOptions o = Fast();
  o.ca_file = pki_->ca_file();
  o.download_mb = 1;
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    // An IP address (checked against the IP SANs, no SNI) and a DNS name.
    std::string url = server.url();
    url.replace(url.find("127.0.0.1"), 9, host);
    auto resolved = Resolve(*ParseTarget(url));
    // The server listens on 127.0.0.1 only; where "localhost" is ::1 first
    // the name case cannot reach it.
    if (!resolved.ok() || resolved->family != AF_INET) continue;
    const TargetResult r = ProbeTarget(*ParseTarget(url), o);
    ASSERT_TRUE(r.error.empty()) << r.error;
    ASSERT_EQ(r.tls.values_ms.size(), 5u) << host << ": " << r.tls.last_error;
    EXPECT_EQ(r.connect.values_ms.size(), 5u);
    EXPECT_EQ(r.ttfb.values_ms.size(), 5u) << r.ttfb.last_error;
    EXPECT_EQ(r.ttft.values_ms.size(), 5u) << r.ttft.last_error;
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_GT(r.tls.values_ms[i], 0);
      // First byte comes after the TCP connect and the handshake both.
      EXPECT_GE(r.ttfb.values_ms[i], r.connect.values_ms[i] + r.tls.values_ms[i]);
    }
    ASSERT_TRUE(r.download.has_value());
    EXPECT_TRUE(r.download->error.empty()) << r.download->error;
    EXPECT_EQ(r.download->bytes, 1u << 20);
  }
}

TEST_F(ProbeTls, AnUntrustedCertificateIsLostHandshakesNotACrash) {
  ScriptedServer server(tls_);
  auto other = http::testing::TestPki::Create();
  ASSERT_TRUE(other.ok()) << other.status();
  ProbeOptions o = Fast();
  o.ca_file = other->ca_file();
  const TargetResult r = ProbeTarget(*ParseTarget(server.url()), o);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_EQ(r.connect.values_ms.size(), 5u);  // TCP itself worked.
  EXPECT_TRUE(r.tls.values_ms.empty());
  EXPECT_EQ(r.tls.attempts, 5);
  EXPECT_NE(r.tls.last_error.find("certificate verify failed"), std::string::npos) << r.tls.last_error;
  EXPECT_TRUE(r.ttfb.values_ms.empty());
  EXPECT_TRUE(r.ttft.values_ms.empty());
}

TEST_F(ProbeTls, AHostTheCertificateDoesNotNameIsRefused) {
  ScriptedServer server(tls_, "127.0.0.2");  // Not in the certificate's IP SANs.
  ProbeOptions o = Fast();
  o.ca_file = pki_->ca_file();
  const TargetResult r = ProbeTarget(*ParseTarget(server.url()), o);
  EXPECT_EQ(r.connect.values_ms.size(), 5u) << r.connect.last_error;
  EXPECT_TRUE(r.tls.values_ms.empty());
  EXPECT_NE(r.tls.last_error.find("certificate verify failed"), std::string::npos) << r.tls.last_error;
}

TEST_F(ProbeTls, ABadCaFileStopsTheTargetWithTheReason) {
  ProbeOptions o = Fast();
  o.ca_file = pki_->dir() + "/missing.pem";
  const TargetResult r = ProbeTarget(*ParseTarget("https://127.0.0.1:1"), o);
  EXPECT_NE(r.error.find("missing.pem"), std::string::npos) << r.error;
}

TEST_F(ProbeTls, APlainHttpServerIsALostHandshake) {
  ScriptedServer plain;
  ProbeOptions o = Fast();
  o.ca_file = pki_->ca_file();
  std::string url = plain.url();
  url.replace(0, 4, "https");
  const TargetResult r = ProbeTarget(*ParseTarget(url), o);
  EXPECT_EQ(r.connect.values_ms.size(), 5u);
  EXPECT_TRUE(r.tls.values_ms.empty());
  EXPECT_NE(r.tls.last_error.find("TLS handshake"), std::string::npos) << r.tls.last_error;
}

}  // namespace
}  // namespace swiftlet::probe
