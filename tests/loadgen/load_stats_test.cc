// Summarize, MeasurementWindowNs and SummarizeLatencies on hand-written
// records with hand-computed results.
#include "loadgen/load_stats.h"

#include "core/clock.h"

#include <vector>

#include "gtest/gtest.h"

namespace swiftlet::loadgen {
namespace {

constexpr int64_t kMs = kNsPerMs;

constexpr auto kDone = RequestOutcome::kFinished;
constexpr auto kFailed = RequestOutcome::kFailed;

RequestTimeline Finished(int64_t arrival_ms, std::vector<int64_t> token_ms, int64_t finish_ms,
                         RequestOutcome outcome) {
  RequestTimeline r;
  r.arrival_ns = arrival_ms * kMs;
  for (int64_t t : token_ms) r.token_times_ns.push_back(t * kMs);
  r.output_tokens = static_cast<int64_t>(token_ms.size());
  if (!token_ms.empty()) r.first_token_ns = token_ms.front() * kMs;
  r.finish_ns = finish_ms < 0 ? -1 : finish_ms * kMs;
  r.outcome = outcome;
  return r;
}

RequestTimeline Refused(int64_t arrival_ms, int64_t after_ms) {
  RequestTimeline r;
  r.arrival_ns = arrival_ms * kMs;
  r.outcome = RequestOutcome::kRefused;
  r.refused_after_ns = after_ms * kMs;
  return r;
}

std::vector<RequestTimeline> ScriptedRecords() {
  RequestTimeline warm = Finished(-1000, {9000}, 10000, kDone);
  warm.warmup = true;
  return {
      warm,
      Finished(0, {100, 120, 150}, 160, kDone),   // TTFT 100, TPOT 25
      Finished(50, {250}, 260, kDone),              // TTFT 200
      Refused(100, 2),
      Finished(150, {200, 210, 220, 230, 240}, 240, kDone),  // TTFT 50, TPOT 10
      Finished(200, {300}, 310, kFailed),
      Refused(250, 5),
      Finished(300, {350}, -1, kFailed),  // Never completed.
      Finished(400, {500}, 505, kDone),  // TTFT 100, one token
  };
}

TEST(LoadStatsTest, SummarizeScriptedRecords) {
  const LoadReport r =
      Summarize(ScriptedRecords(), SloTargets{150 * kMs, 20 * kMs, 0}, 500 * kMs);
  EXPECT_EQ(r.offered, 8);
  EXPECT_EQ(r.finished, 4);
  EXPECT_EQ(r.refused, 2);
  EXPECT_EQ(r.errors, 2);
  // TPOT 25 > 20 misses; TTFT 200 > 150 misses; the one-token request meets.
  EXPECT_EQ(r.met_slo, 2);

  // TTFT 50 100 100 200 (ms).
  EXPECT_EQ(r.ttft.count, 4);
  EXPECT_EQ(r.ttft.p50_ns, 100 * kMs);
  EXPECT_EQ(r.ttft.p90_ns, 200 * kMs);
  EXPECT_EQ(r.ttft.p99_ns, 200 * kMs);
  EXPECT_EQ(r.ttft.max_ns, 200 * kMs);
  EXPECT_DOUBLE_EQ(r.ttft.mean_ns, 112.5 * kMs);
  // TPOT 10 25.
  EXPECT_EQ(r.tpot.count, 2);
  EXPECT_EQ(r.tpot.p50_ns, 10 * kMs);
  EXPECT_EQ(r.tpot.p90_ns, 25 * kMs);
  EXPECT_DOUBLE_EQ(r.tpot.mean_ns, 17.5 * kMs);
  // ITL 10 10 10 10 20 30.
  EXPECT_EQ(r.itl.count, 6);
  EXPECT_EQ(r.itl.p50_ns, 10 * kMs);
  EXPECT_EQ(r.itl.p90_ns, 30 * kMs);
  EXPECT_EQ(r.itl.p95_ns, 30 * kMs);
  EXPECT_DOUBLE_EQ(r.itl.mean_ns, 15.0 * kMs);
  // E2E 90 105 160 210.
  EXPECT_EQ(r.e2e.count, 4);
  EXPECT_EQ(r.e2e.p50_ns, 105 * kMs);
  EXPECT_EQ(r.e2e.p90_ns, 210 * kMs);
  EXPECT_DOUBLE_EQ(r.e2e.mean_ns, 141.25 * kMs);

  EXPECT_EQ(r.duration_ns, 500 * kMs);
  EXPECT_DOUBLE_EQ(r.request_throughput_per_s, 8.0);        // 4 / 0.5 s
  EXPECT_DOUBLE_EQ(r.output_token_throughput_per_s, 20.0);  // 10 / 0.5 s
  EXPECT_DOUBLE_EQ(r.goodput_per_s, 4.0);                   // 2 / 0.5 s
  EXPECT_DOUBLE_EQ(r.slo_attainment_pct, 25.0);             // 2 of 8
  EXPECT_EQ(r.max_refusal_decision_ns, 5 * kMs);
}

TEST(LoadStatsTest, SloTargetsAreInclusiveAndOptional) {
  const std::vector<RequestTimeline> records = ScriptedRecords();
  // No targets: every finished request meets them.
  EXPECT_EQ(Summarize(records, {}, 500 * kMs).met_slo, 4);
  // Exactly on the targets counts as met (TTFT 200, TPOT 25).
  EXPECT_EQ(Summarize(records, {200 * kMs, 25 * kMs, 0}, 500 * kMs).met_slo, 4);
  EXPECT_EQ(Summarize(records, {200 * kMs - 1, 25 * kMs, 0}, 500 * kMs).met_slo, 3);
  EXPECT_EQ(Summarize(records, {200 * kMs, 25 * kMs - 1, 0}, 500 * kMs).met_slo, 3);
  // E2E 90 105 160 210 against 105.
  EXPECT_EQ(Summarize(records, {0, 0, 105 * kMs}, 500 * kMs).met_slo, 2);
  // No duration: no rates.
  const LoadReport r = Summarize(records, {}, 0);
  EXPECT_EQ(r.request_throughput_per_s, 0);
  EXPECT_EQ(r.goodput_per_s, 0);
}

TEST(LoadStatsTest, MeasurementWindowSkipsWarmup) {
  EXPECT_EQ(MeasurementWindowNs(ScriptedRecords()), 505 * kMs);
  EXPECT_EQ(MeasurementWindowNs({}), 0);
  // A refusal's decision and an unfinished request's last token count.
  EXPECT_EQ(MeasurementWindowNs({Refused(10, 7)}), 7 * kMs);
  EXPECT_EQ(MeasurementWindowNs({Finished(0, {30}, -1, kFailed)}), 30 * kMs);
}

TEST(LoadStatsTest, NearestRankPercentiles) {
  std::vector<double> hundred;
  for (int i = 100; i >= 1; --i) hundred.push_back(i);  // Unsorted on purpose.
  LatencySummary s = SummarizeLatencies(hundred);
  EXPECT_EQ(s.count, 100);
  EXPECT_EQ(s.p50_ns, 50);
  EXPECT_EQ(s.p90_ns, 90);
  EXPECT_EQ(s.p95_ns, 95);
  EXPECT_EQ(s.p99_ns, 99);
  EXPECT_EQ(s.max_ns, 100);
  EXPECT_DOUBLE_EQ(s.mean_ns, 50.5);

  s = SummarizeLatencies({3, 1, 2, 4, 5, 6, 7, 8, 9, 10});
  EXPECT_EQ(s.p50_ns, 5);   // ceil(5)
  EXPECT_EQ(s.p90_ns, 9);   // ceil(9)
  EXPECT_EQ(s.p95_ns, 10);  // ceil(9.5)
  EXPECT_EQ(s.p99_ns, 10);

  s = SummarizeLatencies({42});
  EXPECT_EQ(s.p50_ns, 42);
  EXPECT_EQ(s.p99_ns, 42);
  s = SummarizeLatencies({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.max_ns, 0);
}

}  // namespace
}  // namespace swiftlet::loadgen
