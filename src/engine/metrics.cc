#include "engine/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/str_cat.h"

namespace swiftlet {
namespace {

template <typename Enum, size_t N>
std::array<std::string, N> EnumLabels(const char* (*name)(Enum), bool skip_first) {
  std::array<std::string, N> labels;
  for (size_t i = skip_first ? 1 : 0; i < N; ++i) labels[i] = name(static_cast<Enum>(i));
  return labels;
}

}  // namespace

double HistogramSnapshot::Quantile(double q) const {
  SWIFTLET_CHECK(q >= 0 && q <= 1);
  SWIFTLET_CHECK(cumulative.size() == bounds.size() + 1);
  if (count == 0) return std::numeric_limits<double>::quiet_NaN();
  const double rank = q * static_cast<double>(count);
  // The first bucket that reaches the rank and is not empty (rank 0 would
  // otherwise pick a leading empty bucket).
  size_t b = 0;
  while (b < bounds.size() &&
         (static_cast<double>(cumulative[b]) < rank || cumulative[b] == 0)) {
    ++b;
  }
  if (b == bounds.size()) return bounds.back();
  if (b == 0 && bounds[0] <= 0) return bounds[0];
  const double lower = b == 0 ? 0.0 : bounds[b - 1];
  const uint64_t before = b == 0 ? 0 : cumulative[b - 1];
  const double in_bucket = static_cast<double>(cumulative[b] - before);  // > 0, see above.
  return lower + (bounds[b] - lower) * (rank - static_cast<double>(before)) / in_bucket;
}

Histogram::Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)) {
  SWIFTLET_CHECK(!bounds_.empty());
  for (size_t i = 0; i < bounds_.size(); ++i) {
    SWIFTLET_CHECK(std::isfinite(bounds_[i]));
    if (i > 0) SWIFTLET_CHECK(bounds_[i - 1] < bounds_[i]);
  }
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double v) {
  // lower_bound: the first bound >= v, i.e. v <= bound. NaN compares false
  // with everything, so it is sent to +Inf explicitly.
  const size_t i = std::isnan(v) ? bounds_.size()
                                 : static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                                       bounds_.begin());
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

HistogramSnapshot Histogram::Snapshot() const {
  HistogramSnapshot s;
  s.bounds = bounds_;
  s.cumulative.resize(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = total;
  }
  s.count = total;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> LatencyBucketsSeconds() {
  return {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
          0.75,  1,    1.5,   2,    2.5,   5,   10,   20,  30,  60};
}

std::vector<double> TokenLatencyBucketsSeconds() {
  return {0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05, 0.075,
          0.1,   0.15,   0.2,   0.3,  0.5,   0.75, 1,    2.5,  5};
}

EngineMetrics::EngineMetrics()
    : time_to_first_token_seconds(LatencyBucketsSeconds()),
      inter_token_latency_seconds(TokenLatencyBucketsSeconds()),
      time_per_output_token_seconds(TokenLatencyBucketsSeconds()),
      e2e_request_latency_seconds(LatencyBucketsSeconds()),
      queue_time_seconds(LatencyBucketsSeconds()),
      requests_finished("reason",
                        EnumLabels<FinishReason, kFinishReasonCount>(FinishReasonName, false)),
      refusals("reason", EnumLabels<RefusalReason, kRefusalReasonCount>(RefusalReasonName, true)) {}

}  // namespace swiftlet
