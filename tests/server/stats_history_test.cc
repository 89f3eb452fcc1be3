#include "server/stats_history.h"

#include <chrono>
#include <cmath>
#include <thread>

#include <gtest/gtest.h>

#include "core/clock.h"

namespace swiftlet::server {
namespace {

constexpr int64_t kSecond = kNsPerSecond;

TEST(StatsHistoryTest, FirstPointHasNoRatesOrQuantiles) {
  EngineMetrics m;
  m.time_to_first_token_seconds.Observe(0.1);
  m.generation_tokens_total.Add(50);
  StatsHistory h(m);
  h.Sample(0, 1000);
  const auto points = h.Since(0);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(points[0].unix_ms, 1000);
  EXPECT_TRUE(std::isnan(points[0].ttft_p95));
  EXPECT_EQ(points[0].tokens_per_s, 0);
}

TEST(StatsHistoryTest, RatesAreDeltasOverElapsedTime) {
  EngineMetrics m;
  StatsHistory h(m);
  h.Sample(0, 1000);
  m.generation_tokens_total.Add(30);
  m.prompt_tokens_total.Add(12);
  m.requests_finished.Add(FinishReason::kLength, 4);
  m.requests_finished.Add(FinishReason::kStop, 2);
  m.refusals.Add(RefusalReason::kTtftTarget, 3);
  m.refusals.Add(RefusalReason::kInvalid, 5);  // Bad input is not load.
  h.Sample(2 * kSecond, 3000);
  const StatsPoint p = h.Since(1000).at(0);
  EXPECT_EQ(p.unix_ms, 3000);
  EXPECT_DOUBLE_EQ(p.tokens_per_s, 15);
  EXPECT_DOUBLE_EQ(p.prompt_tokens_per_s, 6);
  EXPECT_DOUBLE_EQ(p.requests_per_s, 3);
  EXPECT_DOUBLE_EQ(p.refusals_per_s, 1.5);
}

TEST(StatsHistoryTest, GaugesAreReadAsTheyAre) {
  EngineMetrics m;
  m.requests_waiting.Set(7);
  m.requests_running.Set(3);
  m.kv_blocks_total.Set(200);
  m.kv_blocks_used.Set(50);
  StatsHistory h(m);
  h.Sample(0, 1);
  const StatsPoint p = h.Since(0).at(0);
  EXPECT_EQ(p.queue_depth, 7);
  EXPECT_EQ(p.running, 3);
  EXPECT_DOUBLE_EQ(p.kv_used_fraction, 0.25);
}

TEST(StatsHistoryTest, QuantilesCoverOnlyTheTrailingWindow) {
  EngineMetrics m;
  StatsHistoryOptions o;
  o.window_samples = 3;
  StatsHistory h(m, o);
  h.Sample(0, 0);
  // Slow requests at first...
  for (int i = 0; i < 20; ++i) m.time_to_first_token_seconds.Observe(8.0);
  h.Sample(1 * kSecond, 1000);
  EXPECT_GT(h.Since(500).at(0).ttft_p50, 5.0);
  // ...then only fast ones: a point's window is the 3 intervals before
  // it, so the point 3 samples after the slow ones shows the fast alone.
  for (int s = 2; s <= 4; ++s) {
    for (int i = 0; i < 20; ++i) m.time_to_first_token_seconds.Observe(0.02);
    h.Sample(s * kSecond, s * 1000);
  }
  EXPECT_GT(h.Since(2500).at(0).ttft_p95, 5.0);
  const StatsPoint last = h.Since(3500).at(0);
  EXPECT_LE(last.ttft_p95, 0.025);
  EXPECT_GT(last.ttft_p95, 0.01);
  // A window with no observations has no quantile, not a stale one.
  for (int s = 5; s <= 7; ++s) h.Sample(s * kSecond, s * 1000);
  EXPECT_TRUE(std::isnan(h.Since(6500).at(0).ttft_p50));
  EXPECT_TRUE(std::isnan(h.Since(6500).at(0).tpot_p95));
}

TEST(StatsHistoryTest, KeepsAtMostCapacityPoints) {
  EngineMetrics m;
  StatsHistoryOptions o;
  o.capacity = 5;
  StatsHistory h(m, o);
  for (int s = 1; s <= 12; ++s) h.Sample(s * kSecond, s * 1000);
  const auto all = h.Since(0);
  ASSERT_EQ(all.size(), 5u);
  EXPECT_EQ(all.front().unix_ms, 8000);
  EXPECT_EQ(all.back().unix_ms, 12000);
  EXPECT_EQ(h.Since(10000).size(), 2u);
  EXPECT_TRUE(h.Since(12000).empty());
}

TEST(StatsHistoryTest, ThreadSamplesUntilStopped) {
  EngineMetrics m;
  StatsHistoryOptions o;
  o.interval = std::chrono::milliseconds(5);
  StatsHistory h(m, o);
  h.Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (h.Since(0).size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  h.Stop();
  const size_t n = h.Since(0).size();
  EXPECT_GE(n, 3u);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(h.Since(0).size(), n);
}

}  // namespace
}  // namespace swiftlet::server
