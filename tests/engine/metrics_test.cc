#include "engine/metrics.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace swiftlet {
namespace {

TEST(MetricsTest, ConcurrentRecordingAddsUpExactly) {
  Counter counter;
  DoubleCounter dcounter;
  Gauge gauge;
  DoubleGauge dgauge;
  Histogram hist({1, 2, 3});
  constexpr int kThreads = 4;
  constexpr int kIters = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIters; ++i) {
        counter.Add();
        counter.Add(2);
        dcounter.Add(0.5);  // Exact in binary, so the sum is exact.
        gauge.Add(t % 2 ? 3 : -1);
        dgauge.Add(0.25);
        hist.Observe(static_cast<double>(i % 4) + 0.5);  // 0.5 1.5 2.5 3.5
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counter.Value(), 3u * kThreads * kIters);
  EXPECT_EQ(dcounter.Value(), 0.5 * kThreads * kIters);
  EXPECT_EQ(gauge.Value(), int64_t{2} * kIters * (3 - 1));
  EXPECT_EQ(dgauge.Value(), 0.25 * kThreads * kIters);
  const HistogramSnapshot s = hist.Snapshot();
  const uint64_t per_bucket = kThreads * kIters / 4;
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{per_bucket, 2 * per_bucket, 3 * per_bucket,
                                                  4 * per_bucket}));
  EXPECT_EQ(s.count, 4 * per_bucket);
  EXPECT_EQ(s.sum, (0.5 + 1.5 + 2.5 + 3.5) * per_bucket);
}

TEST(MetricsTest, GaugeSetOverwrites) {
  Gauge g;
  g.Add(5);
  g.Set(-2);
  EXPECT_EQ(g.Value(), -2);
}

TEST(MetricsTest, BucketBoundsAreInclusive) {
  Histogram h({0.1, 0.5, 1});
  h.Observe(0.1);        // == bound: in le="0.1".
  h.Observe(-3);         // Below every bound: first bucket.
  h.Observe(0.1000001);  // Just above: next bucket.
  h.Observe(0.5);
  h.Observe(1);
  h.Observe(1.0000001);  // Above the last bound: +Inf.
  h.Observe(INFINITY);
  const HistogramSnapshot s = h.Snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 5, 7}));
  EXPECT_EQ(s.count, 7u);
  EXPECT_EQ(s.sum, INFINITY);

  Histogram n({1});
  n.Observe(NAN);
  EXPECT_EQ(n.Snapshot().cumulative, (std::vector<uint64_t>{0, 1}));
}

TEST(MetricsTest, QuantileInterpolatesWithinBucket) {
  Histogram h({1, 2, 4, 8});
  for (int i = 0; i < 10; ++i) h.Observe(0.5);
  for (int i = 0; i < 30; ++i) h.Observe(1.5);
  for (int i = 0; i < 40; ++i) h.Observe(3);
  for (int i = 0; i < 20; ++i) h.Observe(5);
  // Cumulative 10, 40, 80, 100; rank = q * 100.
  EXPECT_DOUBLE_EQ(h.Quantile(0.05), 0.5);  // 0 + 1 * 5/10
  EXPECT_DOUBLE_EQ(h.Quantile(0.1), 1.0);   // Rank on a bucket's edge.
  EXPECT_DOUBLE_EQ(h.Quantile(0.5), 2.5);   // 2 + 2 * 10/40
  EXPECT_DOUBLE_EQ(h.Quantile(0.9), 6.0);   // 4 + 4 * 10/20
  EXPECT_DOUBLE_EQ(h.Quantile(1.0), 8.0);
  EXPECT_DOUBLE_EQ(h.Quantile(0.0), 0.0);

  for (int i = 0; i < 100; ++i) h.Observe(100);  // Now half are in +Inf.
  EXPECT_DOUBLE_EQ(h.Quantile(0.99), 8.0);      // The highest finite bound.
  EXPECT_DOUBLE_EQ(h.Quantile(0.25), 2.5);      // Rank 50 again.
}

TEST(MetricsTest, QuantileEdgeCases) {
  EXPECT_TRUE(std::isnan(Histogram({1}).Quantile(0.5)));

  Histogram leading_empty({1, 2});
  leading_empty.Observe(1.5);
  EXPECT_DOUBLE_EQ(leading_empty.Quantile(0), 1.0);  // Skips the empty first bucket.
  EXPECT_DOUBLE_EQ(leading_empty.Quantile(0.5), 1.5);
  EXPECT_DOUBLE_EQ(leading_empty.Quantile(1), 2.0);

  Histogram negative({-1, 0, 1});
  negative.Observe(-2);
  EXPECT_DOUBLE_EQ(negative.Quantile(0.5), -1.0);  // First bound <= 0: no interpolation.
}


TEST(MetricsTest, CounterVecRejectsUnlabeledValue) {
  EngineMetrics m;
  m.refusals.Add(RefusalReason::kQueueFull);
  EXPECT_EQ(m.refusals.Value(RefusalReason::kQueueFull), 1u);
  EXPECT_DEATH(m.refusals.Add(RefusalReason::kNone), "");
}

}  // namespace
}  // namespace swiftlet
