// The gateway end to end against scripted sites (tests/gateway/fake_site.h):
// choice by published wait, failover before the first byte (5xx, 429 with
// its bench, connect errors and the breaker), SSE passed through as it
// comes, the error event when a stream breaks, cancellation of a client
// that leaves, the WebSocket relay, stream affinity, and the pages; and
// TLS on both sides: https/wss sites verified against --ca, the gateway's
// own https listener.
#include "gateway/gateway.h"

#include <chrono>
#include <future>
#include <thread>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/str_cat.h"
#include "gateway/fake_site.h"
#include "http/client.h"
#include "http/server_fixture.h"
#include "http/test_pki.h"
#include "http/websocket_client.h"

namespace swiftlet::gateway {
namespace {

using namespace std::chrono_literals;
using testing::FakeSite;
using http::testing::Fetch;
using http::testing::Fetched;

GatewayOptions TestOptions() {
  GatewayOptions o;
  o.port = 0;
  // Polls at start only, unless a test wants them: the state then moves by
  // live traffic alone, which the test controls.
  o.poll_interval = 60s;
  o.clients.connect_timeout = 1s;
  o.clients.upstream_idle_timeout = 5s;
  return o;
}

std::string ErrorOf(const Fetched& f) { return f.status.ok() ? "" : std::string(f.status.message()); }

std::vector<SiteSpec> Specs(const std::vector<FakeSite*>& sites) {
  std::vector<SiteSpec> out;
  for (FakeSite* s : sites) {
    auto spec = ParseSite(s->name(), s->url());
    EXPECT_TRUE(spec.ok()) << spec.status();
    out.push_back(*spec);
  }
  return out;
}

http::ClientRequest Post(std::string target, std::string body = R"({"prompt":"hi","max_tokens":1})") {
  http::ClientRequest r;
  r.method = "POST";
  r.target = std::move(target);
  r.body = std::move(body);
  return r;
}

std::string SiteOf(const Fetched& f) { return std::string(f.response.headers.Get("x-swiftlet-site").value_or("")); }

nlohmann::json Sites(http::HttpClient& client) {
  Fetched f = Fetch(client, http::testing::Get("/sites"));
  return nlohmann::json::parse(f.response.body)["sites"];
}

nlohmann::json SiteJson(http::HttpClient& client, const std::string& name) {
  for (const auto& s : Sites(client)) {
    if (s["name"] == name) return s;
  }
  return {};
}

// One sample of /metrics, by its full name with labels; -1 if absent.
double Metric(http::HttpClient& client, const std::string& sample) {
  const std::string text = Fetch(client, http::testing::Get("/metrics")).response.body;
  const size_t at = text.find("\n" + sample + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + sample.size() + 2));
}

class GatewayTest : public ::testing::Test {
 protected:
  void StartGateway(const std::vector<FakeSite*>& sites, GatewayOptions o = TestOptions()) {
    gateway_ = std::make_unique<Gateway>(o);
    ASSERT_TRUE(gateway_->Start(Specs(sites)).ok());
    http::HttpClientOptions co;
    co.port = gateway_->port();
    co.idle_timeout = 10s;
    client_ = std::make_unique<http::HttpClient>(co);
  }
  void TearDown() override {
    client_.reset();
    if (gateway_) gateway_->Stop(100ms);
  }

  FakeSite a_{"a"};
  FakeSite b_{"b"};
  std::unique_ptr<Gateway> gateway_;
  std::unique_ptr<http::HttpClient> client_;
};

TEST_F(GatewayTest, SendsToTheLowestExpectedWait) {
  a_.set_wait_ms(50);
  b_.set_wait_ms(0);
  StartGateway({&a_, &b_});
  for (int i = 0; i < 10; ++i) {
    Fetched f = Fetch(*client_, Post("/v1/completions"));
    ASSERT_TRUE(f.status.ok()) << f.status;
    EXPECT_EQ(f.response.status, 200);
    EXPECT_EQ(SiteOf(f), "b");
    EXPECT_EQ(f.response.body, R"({"site":"b"})");
  }
  EXPECT_EQ(a_.requests("/v1/completions"), 0);
  const auto sites = Sites(*client_);
  ASSERT_EQ(sites.size(), 2u);
  EXPECT_EQ(sites[0]["state"], "up");
  EXPECT_EQ(sites[0]["wait_ms"], 50);
  EXPECT_TRUE(sites[1]["rtt_ms"].is_number());
}

TEST_F(GatewayTest, FailsOverOn5xxAndTheBreakerStopsTheTraffic) {
  a_.set_wait_ms(50);
  b_.set_mode(FakeSite::Mode::kError500);
  StartGateway({&a_, &b_});
  for (int i = 0; i < 6; ++i) {
    Fetched f = Fetch(*client_, Post("/v1/completions"));
    EXPECT_EQ(f.response.status, 200);
    EXPECT_EQ(SiteOf(f), "a");
  }
  // Three failures in a row open b's breaker: the rest went straight to a.
  EXPECT_EQ(b_.requests("/v1/completions"), 3);
  EXPECT_EQ(SiteJson(*client_, "b")["breaker"], "open");
  const std::string metrics = Fetch(*client_, http::testing::Get("/metrics")).response.body;
  EXPECT_NE(metrics.find(R"(swiftlet_gateway_failovers_total{site="b",reason="5xx"} 3)"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(swiftlet_gateway_breaker_trips_total{site="b"} 1)"), std::string::npos);
}

TEST_F(GatewayTest, A429BenchesTheSiteForItsRetryAfter) {
  a_.set_wait_ms(50);
  b_.set_mode(FakeSite::Mode::kBusy429);
  StartGateway({&a_, &b_});
  for (int i = 0; i < 5; ++i) {
    Fetched f = Fetch(*client_, Post("/v1/completions"));
    EXPECT_EQ(f.response.status, 200);
    EXPECT_EQ(SiteOf(f), "a");
  }
  EXPECT_EQ(b_.requests("/v1/completions"), 1);
  EXPECT_GT(SiteJson(*client_, "b")["retry_after_ms"].get<int>(), 50'000);
  EXPECT_EQ(SiteJson(*client_, "b")["breaker"], "closed");  // Full is not broken.
}

TEST_F(GatewayTest, WhenEverySiteRefusesTheClientGetsTheLastAnswer) {
  a_.set_mode(FakeSite::Mode::kBusy429);
  b_.set_mode(FakeSite::Mode::kBusy429);
  StartGateway({&a_, &b_});
  Fetched f = Fetch(*client_, Post("/v1/completions"));
  EXPECT_EQ(f.response.status, 429);
  EXPECT_FALSE(SiteOf(f).empty());
  EXPECT_TRUE(f.response.headers.Has("retry-after"));
  // Both are benched now: the gateway answers for itself.
  Fetched g = Fetch(*client_, Post("/v1/completions"));
  EXPECT_EQ(g.response.status, 503);
  EXPECT_EQ(nlohmann::json::parse(g.response.body)["error"]["code"], "no_site_available");
  EXPECT_EQ(Fetch(*client_, http::testing::Get("/ready")).response.status, 503);
}

TEST_F(GatewayTest, WhenEverySiteIsBenchedBrieflyTheRequestWaitsForTheFirst) {
  a_.set_mode(FakeSite::Mode::kBusy429);
  b_.set_mode(FakeSite::Mode::kBusy429);
  a_.set_retry_after_ms(100);
  b_.set_retry_after_ms(100);
  GatewayOptions o = TestOptions();
  o.max_hold = 5s;
  StartGateway({&a_, &b_}, o);
  auto done = std::make_shared<std::promise<Fetched>>();
  std::thread client([&] { done->set_value(Fetch(*client_, Post("/v1/completions"))); });
  // Both refused it once; while it waits for their benches, one frees up.
  ASSERT_TRUE(b_.WaitUntil([&] { return a_.requests("/v1/completions") >= 1 && b_.requests("/v1/completions") >= 1; }));
  b_.set_mode(FakeSite::Mode::kOk);
  auto f = done->get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  client.join();
  const Fetched got = f.get();
  EXPECT_EQ(got.response.status, 200);
  EXPECT_EQ(SiteOf(got), "b");
  EXPECT_GE(Metric(*client_, "swiftlet_gateway_held_total"), 1);
}

TEST_F(GatewayTest, ConnectErrorsFailOverAndOpenTheBreaker) {
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  b_.Stop();  // Polls said it was up; now nothing listens there.
  for (int i = 0; i < 6; ++i) {
    Fetched f = Fetch(*client_, Post("/v1/completions"));
    EXPECT_EQ(f.response.status, 200) << f.response.body;
    EXPECT_EQ(SiteOf(f), "a");
  }
  EXPECT_EQ(SiteJson(*client_, "b")["breaker"], "open");
  const std::string metrics = Fetch(*client_, http::testing::Get("/metrics")).response.body;
  EXPECT_NE(metrics.find(R"(swiftlet_gateway_site_chosen_total{site="b"} 3)"), std::string::npos) << metrics;
}

TEST_F(GatewayTest, StreamsPassThroughEventByEvent) {
  b_.set_mode(FakeSite::Mode::kStream);
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  auto events = std::make_shared<std::vector<std::string>>();
  auto done = std::make_shared<std::promise<absl::Status>>();
  http::ClientCallbacks cb;
  FakeSite* b = &b_;
  cb.on_event = [events, b](std::string_view data) {
    events->emplace_back(data);
    // The site sends its second event only once the first got here.
    if (events->size() == 1) b->Release();
  };
  cb.on_done = [done](absl::Status s, http::ClientResponse r) {
    EXPECT_EQ(r.headers.Get("x-swiftlet-site"), "b");
    EXPECT_EQ(r.headers.Get("content-type"), "text/event-stream");
    done->set_value(s);
  };
  client_->Send(Post("/v1/completions"), std::move(cb));
  auto future = done->get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(future.get().ok());
  EXPECT_EQ(*events, (std::vector<std::string>{"b:one", "b:two", "[DONE]"}));
}

TEST_F(GatewayTest, AStreamThatBreaksAfterTheFirstByteEndsWithAnErrorEvent) {
  b_.set_mode(FakeSite::Mode::kStreamBreak);
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  auto events = std::make_shared<std::vector<std::string>>();
  auto done = std::make_shared<std::promise<absl::Status>>();
  http::ClientCallbacks cb;
  FakeSite* b = &b_;
  cb.on_event = [events, b](std::string_view data) {
    events->emplace_back(data);
    if (events->size() == 1) b->DropHeld();  // The site dies mid-stream.
  };
  cb.on_done = [done](absl::Status s, http::ClientResponse) { done->set_value(s); };
  client_->Send(Post("/v1/completions"), std::move(cb));
  auto future = done->get_future();
  ASSERT_EQ(future.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(future.get().ok());  // Ended properly, not cut.
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[0], "b:one");
  auto error = nlohmann::json::parse((*events)[1]);
  EXPECT_EQ(error["error"]["code"], "upstream_lost");
  EXPECT_EQ(a_.requests("/v1/completions"), 0);  // Bytes were out: no failover.
  const std::string metrics = Fetch(*client_, http::testing::Get("/metrics")).response.body;
  EXPECT_NE(metrics.find(R"(swiftlet_gateway_stream_errors_total{site="b"} 1)"), std::string::npos);
}

TEST_F(GatewayTest, AStreamThatBreaksBeforeItsFirstEventFailsOver) {
  b_.set_mode(FakeSite::Mode::kHeadersThenDrop);
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  Fetched f = Fetch(*client_, Post("/v1/completions"));
  EXPECT_EQ(f.response.status, 200);
  EXPECT_EQ(SiteOf(f), "a");
  EXPECT_EQ(f.response.body, R"({"site":"a"})");
  EXPECT_EQ(b_.requests("/v1/completions"), 1);
}

TEST_F(GatewayTest, AClientThatLeavesCancelsTheSitesRequest) {
  b_.set_mode(FakeSite::Mode::kHang);
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  auto got = std::make_shared<std::promise<void>>();
  http::ClientCallbacks cb;
  cb.on_event = [got](std::string_view) { got->set_value(); };
  const uint64_t id = client_->Send(Post("/v1/completions"), std::move(cb));
  ASSERT_EQ(got->get_future().wait_for(10s), std::future_status::ready);
  client_->Cancel(id);
  EXPECT_TRUE(b_.WaitUntil([&] { return b_.client_left() == 1; }));
}

TEST_F(GatewayTest, RelaysAWebSocketBothWays) {
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  http::WebSocketClientOptions wo;
  wo.port = gateway_->port();
  http::WebSocketClient ws_client(wo);
  auto messages = std::make_shared<std::vector<std::string>>();
  auto got = std::make_shared<std::promise<void>>();
  auto closed = std::make_shared<std::promise<http::WebSocketClientClose>>();
  http::WebSocketClientHandlers h;
  h.on_message = [messages, got](std::string text) {
    messages->push_back(text);
    if (messages->size() == 2) got->set_value();
  };
  h.on_close = [closed](const http::WebSocketClientClose& c) { closed->set_value(c); };
  auto ws = ws_client.Connect("/v1/translate/stream?languages=ja&stream_id=s1", {}, std::move(h));
  ws->SendText("hello");
  ws->SendText("again");
  ASSERT_EQ(got->get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(*messages, (std::vector<std::string>{"b:hello", "b:again"}));
  ws->Close(4000, "done");
  auto close_future = closed->get_future();
  ASSERT_EQ(close_future.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(b_.WaitUntil([&] { return b_.ws_close_code() == 4000; }));
  EXPECT_EQ(a_.requests("/v1/translate/stream"), 0);
}

TEST_F(GatewayTest, ASiteThatClosesAStreamClosesTheClient) {
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  http::WebSocketClientOptions wo;
  wo.port = gateway_->port();
  http::WebSocketClient ws_client(wo);
  auto opened = std::make_shared<std::promise<void>>();
  auto closed = std::make_shared<std::promise<http::WebSocketClientClose>>();
  http::WebSocketClientHandlers h;
  h.on_message = [opened](std::string) { opened->set_value(); };
  h.on_close = [closed](const http::WebSocketClientClose& c) { closed->set_value(c); };
  auto ws = ws_client.Connect("/v1/translate/stream?languages=ja", {}, std::move(h));
  ws->SendText("x");
  ASSERT_EQ(opened->get_future().wait_for(10s), std::future_status::ready);
  b_.CloseWebSockets(4001, "bye");
  auto f = closed->get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  const http::WebSocketClientClose c = f.get();
  EXPECT_EQ(c.code, 4001);
  EXPECT_EQ(c.reason, "bye");
}

TEST_F(GatewayTest, ARefusedUpgradeGetsTheSitesAnswer) {
  a_.set_wait_ms(50);
  StartGateway({&a_, &b_});
  http::WebSocketClientOptions wo;
  wo.port = gateway_->port();
  http::WebSocketClient ws_client(wo);
  auto closed = std::make_shared<std::promise<http::WebSocketClientClose>>();
  http::WebSocketClientHandlers h;
  h.on_close = [closed](const http::WebSocketClientClose& c) { closed->set_value(c); };
  ws_client.Connect("/v1/translate/stream?bad=1", {}, std::move(h));
  auto f = closed->get_future();
  ASSERT_EQ(f.wait_for(10s), std::future_status::ready);
  const http::WebSocketClientClose c = f.get();
  EXPECT_EQ(c.http_status, 400);
  EXPECT_NE(c.http_body.find("bad query"), std::string::npos);
  EXPECT_EQ(a_.requests("/v1/translate/stream"), 0);  // A 400 is the request's fault: no failover.
}

TEST_F(GatewayTest, AStreamIdStaysOnItsSiteWithinTwiceTheBest) {
  a_.set_wait_ms(10);
  b_.set_wait_ms(0);
  GatewayOptions o = TestOptions();
  o.poll_interval = 50ms;
  StartGateway({&a_, &b_}, o);
  const std::string body = R"({"texts":["hi"],"target_languages":["ja"],"stream_id":"live-1"})";
  EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/translate", body))), "b");
  // b is now 15 ms away, a 10: a is best, but b is within 2x, so the
  // stream stays while new work goes to a.
  b_.set_wait_ms(15);
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["wait_ms"] == 15; }));
  EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/translate", body))), "b");
  EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/completions"))), "a");
  // Past 2x: the stream moves, and stays moved.
  b_.set_wait_ms(40);
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["wait_ms"] == 40; }));
  EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/translate", body))), "a");
  b_.set_wait_ms(15);
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["wait_ms"] == 15; }));
  EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/translate", body))), "a");
}

TEST_F(GatewayTest, HealthPollsEjectAndReadmit) {
  GatewayOptions o = TestOptions();
  o.poll_interval = 50ms;
  StartGateway({&a_, &b_}, o);
  b_.set_ready(false);  // Draining: no new work at the next poll.
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["state"] == "draining"; }));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/completions"))), "a");
  b_.set_ready(true);
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["state"] == "up"; }));
  b_.Stop();
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["state"] == "ejected"; }));
  EXPECT_EQ(SiteJson(*client_, "b")["ejections"], 1);
}

TEST_F(GatewayTest, ReplaceSitesKeepsTheStateOfSitesThatStay) {
  StartGateway({&a_});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/completions"))), "a");
  ASSERT_TRUE(gateway_->ReplaceSites(Specs({&a_, &b_})).ok());
  ASSERT_TRUE(b_.WaitUntil([&] { return SiteJson(*client_, "b")["state"] == "up"; }));
  const std::string metrics = Fetch(*client_, http::testing::Get("/metrics")).response.body;
  EXPECT_NE(metrics.find(R"(swiftlet_gateway_site_chosen_total{site="a"} 3)"), std::string::npos) << metrics;
  EXPECT_FALSE(gateway_->ReplaceSites({}).ok());
  EXPECT_EQ(Sites(*client_).size(), 2u);
  ASSERT_TRUE(gateway_->ReplaceSites(Specs({&b_})).ok());
  EXPECT_EQ(Sites(*client_).size(), 1u);
  EXPECT_EQ(SiteOf(Fetch(*client_, Post("/v1/completions"))), "b");
}

TEST_F(GatewayTest, OwnPagesAndBounds) {
  GatewayOptions o = TestOptions();
  o.max_body_bytes = 1024;
  StartGateway({&a_}, o);
  EXPECT_EQ(Fetch(*client_, http::testing::Get("/health")).response.status, 200);
  EXPECT_EQ(Fetch(*client_, http::testing::Get("/ready")).response.status, 200);
  Fetched big = Fetch(*client_, Post("/v1/completions", std::string(4096, 'x')));
  EXPECT_EQ(big.response.status, 413);
  EXPECT_EQ(a_.requests("/v1/completions"), 0);
  EXPECT_EQ(Fetch(*client_, Post("/metrics")).response.status, 405);
}

class GatewayTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto pki = http::testing::TestPki::Create();
    ASSERT_TRUE(pki.ok()) << pki.status();
    pki_ = std::make_unique<http::testing::TestPki>(*std::move(pki));
    auto cert = pki_->IssueServerCert("site", "1001");
    ASSERT_TRUE(cert.ok()) << cert.status();
    site_tls_.cert_file = cert->cert;
    site_tls_.key_file = cert->key;
    auto own = pki_->IssueServerCert("gateway", "2002");
    ASSERT_TRUE(own.ok()) << own.status();
    own_ = *own;
    site_ = std::make_unique<FakeSite>("s", site_tls_);
  }
  void TearDown() override {
    if (gateway_) gateway_->Stop(100ms);
  }

  // The gateway's own listener on https, its sites trusted through `ca_file`.
  GatewayOptions TlsGatewayOptions(const std::string& ca_file) const {
    GatewayOptions o = TestOptions();
    o.clients.ca_file = ca_file;
    o.tls_cert_file = own_.cert;
    o.tls_key_file = own_.key;
    return o;
  }
  http::TlsClientOptions ClientTls() const {
    http::TlsClientOptions tls;
    tls.use_tls = true;
    tls.ca_file = pki_->ca_file();
    return tls;
  }

  std::unique_ptr<http::testing::TestPki> pki_;
  http::TlsServerOptions site_tls_;
  http::testing::ServerCertFiles own_;
  std::unique_ptr<FakeSite> site_;  // https and wss only.
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewayTlsTest, HttpsAndWssEndToEnd) {
  FakeSite& site = *site_;
  gateway_ = std::make_unique<Gateway>(TlsGatewayOptions(pki_->ca_file()));
  ASSERT_TRUE(gateway_->Start(Specs({&site})).ok());
  EXPECT_TRUE(gateway_->tls());

  http::HttpClientOptions co;
  co.port = gateway_->port();
  co.tls = ClientTls();
  http::HttpClient client(co);
  Fetched f = Fetch(client, Post("/v1/completions"));
  ASSERT_TRUE(f.status.ok()) << ErrorOf(f);
  EXPECT_EQ(f.response.status, 200) << f.response.body;
  EXPECT_EQ(SiteOf(f), "s");
  EXPECT_EQ(SiteJson(client, "s")["url"], site.url());

  // A live stream: wss to the gateway, wss from it to the site.
  http::WebSocketClientOptions wo;
  wo.port = gateway_->port();
  wo.tls = ClientTls();
  http::WebSocketClient ws_client(wo);
  auto got = std::make_shared<std::promise<std::string>>();
  http::WebSocketClientHandlers h;
  h.on_message = [got, once = std::make_shared<std::once_flag>()](std::string text) {
    std::call_once(*once, [&] { got->set_value(text); });
  };
  auto ws = ws_client.Connect("/v1/translate/stream?languages=ja&stream_id=t1", {}, std::move(h));
  ws->SendText("hello");
  auto message = got->get_future();
  ASSERT_EQ(message.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(message.get(), "s:hello");
  ws->Close(1000, "done");

  // A new certificate for the listener: OK, and still served.
  EXPECT_TRUE(gateway_->ReloadTls().ok());
  Fetched again = Fetch(client, http::testing::Get("/health"));
  EXPECT_EQ(again.response.status, 200) << ErrorOf(again);
}

TEST_F(GatewayTlsTest, ASiteWhoseCertificateDoesNotVerifyGetsNothing) {
  FakeSite& site = *site_;
  auto other = http::testing::TestPki::Create();
  ASSERT_TRUE(other.ok()) << other.status();
  GatewayOptions o = TestOptions();
  o.clients.ca_file = other->ca_file();
  gateway_ = std::make_unique<Gateway>(o);
  ASSERT_TRUE(gateway_->Start(Specs({&site})).ok());
  http::HttpClientOptions co;
  co.port = gateway_->port();
  http::HttpClient client(co);
  Fetched f = Fetch(client, Post("/v1/completions"));
  EXPECT_GE(f.response.status, 500) << f.response.body;  // The gateway's own refusal.
  EXPECT_EQ(site.requests("/v1/completions"), 0);
  const std::string error = SiteJson(client, "s")["last_error"].dump();
  EXPECT_NE(error.find("certificate verify failed"), std::string::npos) << error;
  EXPECT_EQ(gateway_->ReloadTls().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(GatewayTlsTest, BadTlsFilesFailStart) {
  FakeSite& site = *site_;
  GatewayOptions no_ca = TestOptions();
  no_ca.clients.ca_file = pki_->dir() + "/missing.pem";
  absl::Status s = Gateway(no_ca).Start(Specs({&site}));
  EXPECT_NE(s.message().find("missing.pem"), std::string::npos) << s;

  GatewayOptions no_key = TlsGatewayOptions(pki_->ca_file());
  no_key.tls_key_file.clear();
  EXPECT_EQ(Gateway(no_key).Start(Specs({&site})).code(), absl::StatusCode::kInvalidArgument);

  GatewayOptions wrong_key = TlsGatewayOptions(pki_->ca_file());
  wrong_key.tls_key_file = site_tls_.key_file;
  s = Gateway(wrong_key).Start(Specs({&site}));
  EXPECT_NE(s.message().find("does not match"), std::string::npos) << s;
}

}  // namespace
}  // namespace swiftlet::gateway
