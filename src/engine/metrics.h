// Metrics the engine records and the server exports (/metrics; the text
// format is server/prometheus_text.h's).
//
// Every type here is thread-safe and lock-free: any thread may record, any
// thread may read. Reads are not one atomic snapshot of several metrics;
// each value is one that was current at some moment during the read.
// Recording uses relaxed atomics (a few nanoseconds), so the engine thread
// can record per token.
//
// Names and units follow Prometheus conventions: base units (seconds,
// tokens, blocks), counters end in _total (the exporter adds it), and
// nothing else does.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/check.h"
#include "engine/request.h"

namespace swiftlet {

// A monotonic count: uint64_t (Counter) or double (DoubleCounter).
template <typename T>
class BasicCounter {
 public:
  static_assert(std::is_same_v<T, uint64_t> || std::is_same_v<T, double>);
  // `n` must be >= 0 (checked for double).
  void Add(T n = 1) {
    if constexpr (std::is_floating_point_v<T>) SWIFTLET_CHECK(n >= 0);
    value_.fetch_add(n, std::memory_order_relaxed);
  }
  T Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<T> value_{0};
};
using Counter = BasicCounter<uint64_t>;
using DoubleCounter = BasicCounter<double>;

// A value that goes up and down: int64_t (Gauge) or double (DoubleGauge).
template <typename T>
class BasicGauge {
 public:
  static_assert(std::is_same_v<T, int64_t> || std::is_same_v<T, double>);
  void Set(T v) { value_.store(v, std::memory_order_relaxed); }
  void Add(T d) { value_.fetch_add(d, std::memory_order_relaxed); }
  T Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<T> value_{0};
};
using Gauge = BasicGauge<int64_t>;
using DoubleGauge = BasicGauge<double>;

// What a Histogram held at one moment.
struct HistogramSnapshot {
  std::vector<double> bounds;       // Finite upper bounds, increasing.
  std::vector<uint64_t> cumulative;  // Per bound, then +Inf: observations <= bound.
  double sum = 0;
  uint64_t count = 0;  // == cumulative.back()

  // The q-quantile (0 <= q <= 1, checked) estimated as Prometheus's
  // histogram_quantile does: find the bucket holding rank q * count and
  // interpolate linearly inside it, taking the first bucket's lower bound
  // as 0 (or its upper bound when that is <= 0). In the +Inf bucket: the
  // highest finite bound. No observations: NaN.
  double Quantile(double q) const;
};

// Observations counted in buckets with fixed upper bounds, Prometheus `le`
// semantics: an observation v lands in the first bucket with v <= bound,
// or in +Inf (NaN lands there too, as in the Prometheus clients).
//
// The count is the sum of the bucket counts, so a snapshot's +Inf bucket
// always equals its count even while other threads observe; only the sum
// may run slightly ahead of or behind the buckets during a read.
class Histogram {
 public:
  // `bounds`: non-empty, finite, strictly increasing (checked).
  explicit Histogram(std::vector<double> bounds);

  void Observe(double v);
  HistogramSnapshot Snapshot() const;
  double Quantile(double q) const { return Snapshot().Quantile(q); }
  const std::vector<double>& bounds() const { return bounds_; }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1, not cumulative.
  std::atomic<double> sum_{0};
};

// Request-level latencies (TTFT, end to end, queue time): 5 ms .. 60 s.
std::vector<double> LatencyBucketsSeconds();
// Per-token latencies (ITL, TPOT): 1 ms .. 5 s.
std::vector<double> TokenLatencyBucketsSeconds();

// A counter per value of a small enum whose values are 0 .. N-1, exported
// with one label. A value whose label is empty is not a valid one (Add
// checks) and is not exported.
template <typename Enum, size_t N>
class CounterVec {
 public:
  CounterVec(std::string label_name, std::array<std::string, N> label_values)
      : label_name_(std::move(label_name)), label_values_(std::move(label_values)) {}

  void Add(Enum e, uint64_t n = 1) { counters_[Index(e)].Add(n); }
  uint64_t Value(Enum e) const { return counters_[Index(e)].Value(); }

  const std::string& label_name() const { return label_name_; }
  static constexpr size_t size() { return N; }
  const std::string& label_value(size_t i) const { return label_values_[i]; }
  uint64_t value_at(size_t i) const { return counters_[i].Value(); }

 private:
  size_t Index(Enum e) const {
    const auto i = static_cast<size_t>(e);
    SWIFTLET_CHECK(i < N && !label_values_[i].empty());
    return i;
  }

  std::string label_name_;
  std::array<std::string, N> label_values_;
  std::array<Counter, N> counters_;
};

inline constexpr size_t kFinishReasonCount = static_cast<size_t>(FinishReason::kError) + 1;
inline constexpr size_t kRefusalReasonCount = static_cast<size_t>(RefusalReason::kNotReady) + 1;

// Everything the engine reports. One instance per engine, shared with the
// server, which formats it on each scrape. Exported names (with the default
// prefix) are the field names, counters with _total; kv_blocks_total is
// exported as swiftlet_kv_blocks_capacity because only counters may end in
// _total.
struct EngineMetrics {
  EngineMetrics();
  EngineMetrics(const EngineMetrics&) = delete;
  EngineMetrics& operator=(const EngineMetrics&) = delete;

  // Seconds; definitions as in engine/request.h.
  Histogram time_to_first_token_seconds;    // Received .. first token event.
  Histogram inter_token_latency_seconds;    // Between consecutive token events.
  Histogram time_per_output_token_seconds;  // Per request with >= 2 tokens.
  Histogram e2e_request_latency_seconds;    // Received .. finished.
  Histogram queue_time_seconds;             // Received .. first prefill chunk.

  Gauge requests_running;
  Gauge requests_waiting;
  Gauge kv_blocks_used;
  Gauge kv_blocks_total;  // Exported as kv_blocks_capacity.

  Counter prefix_cache_queries_tokens;  // Prompt tokens looked up in the prefix cache.
  Counter prefix_cache_hits_tokens;     // Of those, found cached.
  Counter prompt_tokens_total;
  // Prompt positions run through the forward pass (recomputation after a
  // preemption included), and prompt positions that were not because the
  // prefix cache or a group's shared part supplied them.
  Counter prompt_tokens_computed_total;
  Counter prompt_tokens_cached_total;
  Counter generation_tokens_total;
  CounterVec<FinishReason, kFinishReasonCount> requests_finished;  // By reason.
  CounterVec<RefusalReason, kRefusalReasonCount> refusals;         // kNone not valid.
  Counter preemptions_total;
  Counter prefix_warmups_total;  // Refused prompts computed to cache their prefix.
};

}  // namespace swiftlet
