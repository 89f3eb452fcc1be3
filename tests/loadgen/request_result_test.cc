// RequestRecorder on scripted callback sequences with a FakeClock: every
// timestamp, count and classification is known exactly, with no wall time
// and no network. Then the recorders' timelines through Summarize and
// SummarizePoint, with goodput and attainment computed by hand.
#include "loadgen/request_result.h"

#include <string>
#include <vector>

#include "loadgen/point_summary.h"
#include "gtest/gtest.h"

namespace swiftlet::loadgen {
namespace {

std::string TextChunk(const std::string& text) {
  return R"({"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":")" +
         text + R"(","logprobs":null,"finish_reason":null}]})";
}
std::string FinishChunk(const std::string& reason) {
  return R"({"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":")" +
         reason + R"("}]})";
}
std::string UsageChunk(int prompt, int completion, int cached) {
  return R"({"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":)" +
         std::to_string(prompt) + R"(,"completion_tokens":)" + std::to_string(completion) +
         R"(,"total_tokens":0,"prompt_tokens_details":{"cached_tokens":)" + std::to_string(cached) +
         "}}}";
}

http::ClientResponse Response(int status, http::Headers headers = {}, std::string body = "") {
  http::ClientResponse r;
  r.status = status;
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

// A streamed request: headers at `headers_ms`, one chunk per entry of
// `token_ms`, then finish, usage and [DONE], done at `done_ms`.
RequestResult Streamed(FakeClock& clock, int64_t arrival_ms, int64_t headers_ms,
                       std::vector<int64_t> token_ms, int64_t done_ms, int32_t asked,
                       bool usage = true) {
  clock.Set(arrival_ms * kNsPerMs);
  RequestRecorder r(clock, 0, arrival_ms * kNsPerMs, false, asked);
  r.OnSent();
  clock.Set(headers_ms * kNsPerMs);
  r.OnHeaders(200, {{"Content-Type", "text/event-stream"}});
  for (int64_t t : token_ms) {
    clock.Set(t * kNsPerMs);
    r.OnEvent(TextChunk("x"));
  }
  r.OnEvent(FinishChunk("length"));
  if (usage) r.OnEvent(UsageChunk(40, static_cast<int>(token_ms.size()), 8));
  r.OnEvent("[DONE]");
  clock.Set(done_ms * kNsPerMs);
  r.OnDone(absl::OkStatus(), Response(200));
  return r.result();
}

TEST(RequestRecorderTest, StreamedRequestTimesEveryTokenChunk) {
  FakeClock clock;
  const RequestResult r = Streamed(clock, 1000, 1040, {1100, 1120, 1150, 1190}, 1195, 4);
  EXPECT_EQ(r.timeline.outcome, RequestOutcome::kFinished);
  EXPECT_EQ(r.kind, "");
  EXPECT_EQ(r.http_status, 200);
  EXPECT_EQ(r.sent_ns, 1000 * kNsPerMs);
  EXPECT_EQ(r.timeline.arrival_ns, 1000 * kNsPerMs);
  EXPECT_EQ(r.timeline.first_token_ns, 1100 * kNsPerMs);
  EXPECT_EQ(r.timeline.token_times_ns,
            (std::vector<int64_t>{1100 * kNsPerMs, 1120 * kNsPerMs, 1150 * kNsPerMs, 1190 * kNsPerMs}));
  EXPECT_EQ(r.timeline.finish_ns, 1195 * kNsPerMs);
  EXPECT_EQ(r.timeline.output_tokens, 4);
  EXPECT_EQ(r.chunks, 4);
  EXPECT_EQ(r.prompt_tokens, 40);
  EXPECT_EQ(r.cached_prompt_tokens, 8);
  EXPECT_EQ(r.completion_tokens, 4);
  EXPECT_EQ(r.finish_reason, "length");
}

TEST(RequestRecorderTest, UsageWinsOverCountedChunksAndLogprobsCountTokens) {
  FakeClock clock;
  RequestRecorder r(clock, 3, 0, false, 5);
  r.OnHeaders(200, {});
  clock.Set(10 * kNsPerMs);
  // One chunk carrying two tokens (two logprobs entries).
  r.OnEvent(R"({"object":"text_completion","choices":[{"index":0,"text":"ab","logprobs":{"tokens":["a","b"],"token_logprobs":[-1,-2],"top_logprobs":null,"text_offset":[0,1]},"finish_reason":null}]})");
  clock.Set(20 * kNsPerMs);
  // Choice 1 is not followed.
  r.OnEvent(R"({"object":"text_completion","choices":[{"index":1,"text":"zz","finish_reason":null}]})");
  r.OnEvent(FinishChunk("stop"));
  r.OnEvent("[DONE]");
  r.OnDone(absl::OkStatus(), Response(200));
  EXPECT_EQ(r.result().timeline.output_tokens, 2);  // Counted: no usage sent.
  EXPECT_EQ(r.result().timeline.token_times_ns, std::vector<int64_t>{10 * kNsPerMs});
  EXPECT_EQ(r.result().completion_tokens, -1);

  const RequestResult u = Streamed(clock, 0, 1, {2, 3}, 4, 2, /*usage=*/false);
  EXPECT_EQ(u.timeline.output_tokens, 2);
  EXPECT_EQ(u.prompt_tokens, -1);
}

TEST(RequestRecorderTest, ChatDeltasAreTokensAndRoleOnlyDeltasAreNot) {
  FakeClock clock;
  RequestRecorder r(clock, 0, 0, false, 1);
  r.OnHeaders(200, {});
  clock.Set(5 * kNsPerMs);
  r.OnEvent(R"({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})");
  clock.Set(7 * kNsPerMs);
  r.OnEvent(R"({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]})");
  r.OnEvent(R"({"object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"length"}]})");
  r.OnEvent("[DONE]");
  r.OnDone(absl::OkStatus(), Response(200));
  EXPECT_EQ(r.result().timeline.first_token_ns, 7 * kNsPerMs);
  EXPECT_EQ(r.result().timeline.output_tokens, 1);
  EXPECT_EQ(r.result().timeline.outcome, RequestOutcome::kFinished);
}

TEST(RequestRecorderTest, RefusalsAreClassifiedWithTheirRetryAfter) {
  FakeClock clock(100 * kNsPerMs);
  RequestRecorder r(clock, 0, 100 * kNsPerMs, false, 8);
  clock.Set(103 * kNsPerMs);
  const http::Headers headers = {{"Retry-After", "2"}, {"retry-after-ms", "1500"}};
  r.OnHeaders(429, headers);
  clock.Set(104 * kNsPerMs);
  r.OnDone(absl::OkStatus(),
           Response(429, headers,
                    R"({"error":{"message":"queue full","type":"rate_limit_error","param":null,"code":"queue_full"}})"));
  EXPECT_EQ(r.result().timeline.outcome, RequestOutcome::kRefused);
  EXPECT_EQ(r.result().kind, "refused:queue_full");
  EXPECT_EQ(r.result().retry_after_ms, 1500);
  EXPECT_EQ(r.result().timeline.refused_after_ns, 3 * kNsPerMs);  // At the header, not the body.

  // Retry-After seconds only; a body that is not an OpenAI error.
  RequestRecorder s(clock, 0, 104 * kNsPerMs, false, 8);
  s.OnHeaders(429, {{"Retry-After", "3"}});
  s.OnDone(absl::OkStatus(), Response(429, {{"Retry-After", "3"}}, "busy"));
  EXPECT_EQ(s.result().kind, "refused");
  EXPECT_EQ(s.result().retry_after_ms, 3000);

  RequestRecorder t(clock, 0, 104 * kNsPerMs, false, 8);
  t.OnHeaders(429, {{"Retry-After", "soon"}});
  t.OnDone(absl::OkStatus(), Response(429, {{"Retry-After", "soon"}}));
  EXPECT_EQ(t.result().retry_after_ms, -1);
}

TEST(RequestRecorderTest, FailuresAreClassifiedByKind) {
  FakeClock clock;
  auto done_with = [&](int status, absl::Status transport) {
    RequestRecorder r(clock, 0, 0, false, 4);
    if (status > 0) r.OnHeaders(status, {});
    r.OnDone(transport, Response(status));
    EXPECT_EQ(r.result().timeline.outcome, RequestOutcome::kFailed);
    return r.result().kind;
  };
  EXPECT_EQ(done_with(500, absl::OkStatus()), "http_500");
  EXPECT_EQ(done_with(503, absl::OkStatus()), "http_503");
  EXPECT_EQ(done_with(0, absl::DeadlineExceededError("t")), "timeout");
  EXPECT_EQ(done_with(0, absl::UnavailableError("c")), "connection");
  EXPECT_EQ(done_with(0, absl::CancelledError("x")), "cancelled");
  EXPECT_EQ(done_with(200, absl::ResourceExhaustedError("big")), "response_too_large");
  EXPECT_EQ(done_with(200, absl::InvalidArgumentError("bad")), "malformed_response");

  // A stream that ends without [DONE]: truncated, even with tokens.
  RequestRecorder r(clock, 0, 0, false, 4);
  r.OnHeaders(200, {});
  r.OnEvent(TextChunk("a"));
  r.OnEvent(FinishChunk("length"));
  r.OnDone(absl::OkStatus(), Response(200));
  EXPECT_EQ(r.result().kind, "truncated_stream");
  // A chunk that is not JSON.
  RequestRecorder m(clock, 0, 0, false, 4);
  m.OnHeaders(200, {});
  m.OnEvent("{not json");
  m.OnEvent(FinishChunk("length"));
  m.OnEvent("[DONE]");
  m.OnDone(absl::OkStatus(), Response(200));
  EXPECT_EQ(m.result().kind, "malformed_chunk");
  // A second OnDone changes nothing.
  m.OnDone(absl::OkStatus(), Response(200));
  EXPECT_EQ(m.result().kind, "malformed_chunk");
}

TEST(PointSummaryTest, GoodputAndAttainmentFromScriptedRequests) {
  FakeClock clock;
  PointResult point;
  point.point.mode = LoadMode::kOpenLoop;
  point.point.rate_per_s = 4;
  // Warm-up: left out.
  RequestResult warm = Streamed(clock, 0, 1, {2000, 2001}, 2002, 2);
  warm.timeline.warmup = true;
  point.requests.push_back(warm);
  // TTFT 100, TPOT (160-100)/3 = 20: meets ttft=150ms,tpot=20ms exactly.
  point.requests.push_back(Streamed(clock, 1000, 1010, {1100, 1120, 1140, 1160}, 1170, 4));
  // TTFT 200: misses.
  point.requests.push_back(Streamed(clock, 1100, 1110, {1300, 1310}, 1320, 2));
  // TPOT 30: misses; and asked 3, got 2 (a mismatch).
  point.requests.push_back(Streamed(clock, 1200, 1210, {1250, 1280}, 1290, 3));
  // A refusal and a failure.
  {
    clock.Set(1300 * kNsPerMs);
    RequestRecorder r(clock, 4, 1300 * kNsPerMs, false, 4);
    clock.Set(1302 * kNsPerMs);
    r.OnHeaders(429, {{"retry-after-ms", "250"}});
    r.OnDone(absl::OkStatus(), Response(429));
    point.requests.push_back(r.result());
    RequestRecorder f(clock, 5, 1400 * kNsPerMs, false, 4);
    f.OnHeaders(500, {});
    clock.Set(1500 * kNsPerMs);
    f.OnDone(absl::OkStatus(), Response(500));
    point.requests.push_back(f.result());
  }
  const PointSummary s = SummarizePoint(point, SloTargets{150 * kNsPerMs, 20 * kNsPerMs, 0});
  EXPECT_EQ(s.report.offered, 5);
  EXPECT_EQ(s.report.finished, 3);
  EXPECT_EQ(s.report.refused, 1);
  EXPECT_EQ(s.report.errors, 1);
  EXPECT_EQ(s.report.met_slo, 1);
  // Window: 1000 ms (first arrival) to 1400 ms (the failure's arrival is
  // the last thing seen of it; the latest finish is 1320).
  EXPECT_EQ(s.report.duration_ns, 400 * kNsPerMs);
  EXPECT_DOUBLE_EQ(s.report.goodput_per_s, 2.5);
  EXPECT_DOUBLE_EQ(s.report.slo_attainment_pct, 20.0);
  EXPECT_DOUBLE_EQ(s.report.request_throughput_per_s, 7.5);
  EXPECT_EQ(s.report.max_refusal_decision_ns, 2 * kNsPerMs);
  EXPECT_EQ(s.refusals_by_kind, (std::map<std::string, int64_t>{{"refused", 1}}));
  EXPECT_EQ(s.errors_by_kind, (std::map<std::string, int64_t>{{"http_500", 1}}));
  EXPECT_EQ(s.refusals_with_retry_after, 1);
  EXPECT_EQ(s.output_token_mismatches, 1);
  EXPECT_DOUBLE_EQ(s.mean_prompt_tokens, 40);
  EXPECT_DOUBLE_EQ(s.mean_cached_prompt_tokens, 8);
  EXPECT_EQ(s.report.ttft.p50_ns, 100 * kNsPerMs);
  EXPECT_EQ(s.report.ttft.max_ns, 200 * kNsPerMs);
  EXPECT_DOUBLE_EQ(s.report.tpot.max_ns, 30.0 * kNsPerMs);
}

TEST(PointSummaryTest, SaturatedClientIsFlagged) {
  PointResult p;
  p.client.cpu_pct_of_core = kSaturatedCpuPct;
  EXPECT_TRUE(SummarizePoint(p, {}).client_saturated);
  p.client.cpu_pct_of_core = 10;
  EXPECT_FALSE(SummarizePoint(p, {}).client_saturated);
  p.client.send_lag.p99_ns = static_cast<double>(kSaturatedSendLagNs);
  EXPECT_TRUE(SummarizePoint(p, {}).client_saturated);
}

}  // namespace
}  // namespace swiftlet::loadgen
