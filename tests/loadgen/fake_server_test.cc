// The load runner end to end against a scripted fake OpenAI server (our
// HTTP transport with a hand-written handler, no engine): the n-th request
// to arrive is refused (429 with Retry-After), fails (500), is cut short,
// or streams exactly max_tokens chunks whose SSE bytes are written in
// pieces that split lines, fields and events. The runner must count every
// token, classify every outcome, and leave nothing in flight.
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "loadgen/load_runner.h"
#include "loadgen/point_summary.h"
#include "loadgen/report.h"
#include "loadgen/workload.h"
#include "gtest/gtest.h"
#include "http/client.h"
#include "http/server.h"

namespace swiftlet::loadgen {
namespace {

using namespace std::chrono_literals;

std::string Chunk(const std::string& text, const std::string& finish) {
  nlohmann::json j = {{"id", "cmpl-1"}, {"object", "text_completion"}, {"created", 1}, {"model", "fake"}};
  j["choices"] = {{{"index", 0}, {"text", text}, {"logprobs", nullptr},
                   {"finish_reason", finish.empty() ? nlohmann::json(nullptr) : nlohmann::json(finish)}}};
  return j.dump();
}

// Writes `bytes` in pieces of 1, 2, 3, ... bytes, so SSE lines and
// events straddle chunk boundaries.
void WriteInPieces(http::ResponseWriter& w, const std::string& bytes, size_t& piece) {
  for (size_t at = 0; at < bytes.size();) {
    const size_t n = std::min(bytes.size() - at, 1 + piece++ % 7);
    w.Write(std::string_view(bytes).substr(at, n));
    at += n;
  }
}

class FakeServer {
 public:
  FakeServer() {
    http::HttpServerOptions o;
    o.port = 0;
    o.io_threads = 2;
    server_ = std::make_unique<http::HttpServer>(
        o, [this](http::HttpRequest req, std::shared_ptr<http::ResponseWriter> w) {
          Handle(std::move(req), std::move(w));
        });
    EXPECT_TRUE(server_->Start().ok());
  }
  ~FakeServer() {
    server_->Stop(2s);
    for (auto& t : threads_) t.join();
  }
  uint16_t port() const { return server_->port(); }
  int requests() const { return arrived_.load(); }

 private:
  void Handle(http::HttpRequest req, std::shared_ptr<http::ResponseWriter> w) {
    const int n = arrived_++;
    if (n % 5 == 0) {
      w->Respond(429, {{"Content-Type", "application/json"}, {"Retry-After", "1"}, {"retry-after-ms", "700"}},
                 R"({"error":{"message":"busy","type":"rate_limit_error","param":null,"code":"queue_full"}})");
      return;
    }
    if (n % 7 == 3) {
      w->Respond(500, {{"Content-Type", "application/json"}},
                 R"({"error":{"message":"boom","type":"server_error","param":null,"code":null}})");
      return;
    }
    const auto body = nlohmann::json::parse(req.body, nullptr, false);
    const int max_tokens = body.is_object() ? body.value("max_tokens", 1) : 1;
    const bool truncate = n % 11 == 2;
    // Streams from a thread of its own, pausing between tokens, as an
    // engine would.
    std::lock_guard lock(mu_);
    threads_.emplace_back([w, max_tokens, truncate] {
      w->StartStream(200, {{"Content-Type", "text/event-stream"}});
      size_t piece = 0;
      for (int i = 0; i < max_tokens; ++i) {
        std::this_thread::sleep_for(1ms);
        WriteInPieces(*w, "data: " + Chunk("t" + std::to_string(i), "") + "\n\n", piece);
      }
      if (!truncate) {
        WriteInPieces(*w, "data: " + Chunk("", "length") + "\r\n\r\n", piece);
        WriteInPieces(*w, ": a comment line\ndata: [DONE]\n\n", piece);
      }
      w->End();
    });
  }

  std::unique_ptr<http::HttpServer> server_;
  std::atomic<int> arrived_{0};
  std::mutex mu_;
  std::vector<std::thread> threads_;
};

struct Counts {
  int refused = 0, failed500 = 0, truncated = 0, finished = 0;
};

// What the script does to arrivals 0..n-1.
Counts Expected(int n) {
  Counts c;
  for (int i = 0; i < n; ++i) {
    if (i % 5 == 0) {
      c.refused++;
    } else if (i % 7 == 3) {
      c.failed500++;
    } else if (i % 11 == 2) {
      c.truncated++;
    } else {
      c.finished++;
    }
  }
  return c;
}

void CheckPoint(const PointResult& result, int n, const FakeServer& server) {
  ASSERT_EQ(static_cast<int>(result.requests.size()), n);
  EXPECT_EQ(server.requests(), n);
  const PointSummary s = SummarizePoint(result, {});
  const Counts want = Expected(n);
  EXPECT_EQ(s.report.offered, n);
  EXPECT_EQ(s.report.finished, want.finished);
  EXPECT_EQ(s.report.refused, want.refused);
  EXPECT_EQ(s.refusals_by_kind, (std::map<std::string, int64_t>{{"refused:queue_full", want.refused}}));
  EXPECT_EQ(s.refusals_with_retry_after, want.refused);
  std::map<std::string, int64_t> errors;
  if (want.failed500) errors["http_500"] = want.failed500;
  if (want.truncated) errors["truncated_stream"] = want.truncated;
  EXPECT_EQ(s.errors_by_kind, errors);
  EXPECT_EQ(s.output_token_mismatches, 0);
  for (const RequestResult& r : result.requests) {
    if (r.timeline.outcome == RequestOutcome::kRefused) {
      EXPECT_EQ(r.retry_after_ms, 700);
    }
    if (r.timeline.outcome != RequestOutcome::kFinished) continue;
    EXPECT_EQ(r.timeline.output_tokens, r.asked_output_tokens);
    EXPECT_EQ(static_cast<int64_t>(r.timeline.token_times_ns.size()), r.asked_output_tokens);
    EXPECT_GE(r.timeline.first_token_ns, r.timeline.arrival_ns);
    EXPECT_LE(r.timeline.token_times_ns.back(), r.timeline.finish_ns);
    EXPECT_EQ(r.finish_reason, "length");
  }
}

WorkloadOptions Options() {
  WorkloadOptions o;
  o.model = "fake";
  o.prompt_words = {5, 5};
  o.output_tokens = {2, 9};
  return o;
}

TEST(FakeServerTest, ClosedLoopCountsTokensAndClassifiesEveryOutcome) {
  FakeServer server;
  http::HttpClientOptions co;
  co.port = server.port();
  http::HttpClient client(co);
  auto workload = MakeWorkload("synthetic", Options());
  ASSERT_TRUE(workload.ok());
  LoadPoint p;
  p.mode = LoadMode::kClosedLoop;
  p.concurrency = 6;
  p.requests = 60;
  int progress_calls = 0;
  const PointResult result = RunLoadPoint(client, **workload, p, SystemClock(), SystemSleep(),
                                          [&](const Progress&) { ++progress_calls; });
  CheckPoint(result, 60, server);
  EXPECT_LE(result.client.peak_in_flight, 6);
  EXPECT_GE(progress_calls, 1);
}

TEST(FakeServerTest, OpenLoopSendsOnScheduleAndReportsAreConsistent) {
  FakeServer server;
  http::HttpClientOptions co;
  co.port = server.port();
  http::HttpClient client(co);
  auto workload = MakeWorkload("synthetic", Options());
  ASSERT_TRUE(workload.ok());
  LoadPoint p;
  p.mode = LoadMode::kOpenLoop;
  p.rate_per_s = 200;
  p.requests = 45;
  p.warmup_requests = 0;
  const PointResult result = RunLoadPoint(client, **workload, p, SystemClock(), SystemSleep(), nullptr);
  CheckPoint(result, 45, server);
  for (size_t i = 1; i < result.requests.size(); ++i) {
    EXPECT_GE(result.requests[i].timeline.arrival_ns, result.requests[i - 1].timeline.arrival_ns);
  }
  // The JSON report carries the same figures as the summary.
  const PointSummary s = SummarizePoint(result, {});
  const auto json = nlohmann::json::parse(ReportJson({}, {s}, {result}));
  EXPECT_EQ(json["points"][0]["finished"], s.report.finished);
  EXPECT_EQ(json["points"][0]["refused"], s.report.refused);
  EXPECT_EQ(json["points"][0]["requests"].size(), 45u);
  EXPECT_DOUBLE_EQ(json["points"][0]["ttft_ms"]["p99"].get<double>(), s.report.ttft.p99_ns / 1e6);
  const std::string html = ReportHtml({}, {s}, {result});
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // No external links.
}

TEST(FakeServerTest, DrainTimeoutCancelsWhatIsLeft) {
  // A server that never answers.
  std::vector<std::shared_ptr<http::ResponseWriter>> held;
  std::mutex mu;
  http::HttpServerOptions o;
  o.port = 0;
  http::HttpServer server(o, [&](http::HttpRequest, std::shared_ptr<http::ResponseWriter> w) {
    std::lock_guard lock(mu);
    held.push_back(std::move(w));
  });
  ASSERT_TRUE(server.Start().ok());
  http::HttpClientOptions co;
  co.port = server.port();
  http::HttpClient client(co);
  auto workload = MakeWorkload("synthetic", Options());
  ASSERT_TRUE(workload.ok());
  LoadPoint p;
  p.mode = LoadMode::kClosedLoop;
  p.concurrency = 3;
  p.requests = 3;
  p.drain_timeout_ns = 200 * kNsPerMs;
  const PointResult result = RunLoadPoint(client, **workload, p, SystemClock(), SystemSleep(), nullptr);
  ASSERT_EQ(result.requests.size(), 3u);
  for (const RequestResult& r : result.requests) EXPECT_EQ(r.kind, "cancelled");
  {
    std::lock_guard lock(mu);
    held.clear();
  }
  server.Stop(1s);
}

TEST(LoadPointTest, ValidationNamesTheProblem) {
  LoadPoint p;
  EXPECT_EQ(ValidateLoadPoint(p).message(), "give a request count or a duration");
  p.requests = 10;
  EXPECT_TRUE(ValidateLoadPoint(p).ok());
  p.warmup_requests = 10;
  EXPECT_FALSE(ValidateLoadPoint(p).ok());
  p.warmup_requests = 0;
  p.rate_per_s = 0;
  EXPECT_FALSE(ValidateLoadPoint(p).ok());
  p.mode = LoadMode::kClosedLoop;
  p.concurrency = 0;
  EXPECT_EQ(ValidateLoadPoint(p).message(), "concurrency: must be in [1, 100000]");
}

}  // namespace
}  // namespace swiftlet::loadgen
