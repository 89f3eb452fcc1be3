// The last few minutes of the engine's metrics as a time series, for the
// dashboard (GET /stats, server/web_routes.cc). /metrics gives Prometheus
// cumulative counters; a browser wants points: latency quantiles over a
// short trailing window, rates per second and gauges, one point a second.
//
// Sample() reads the engine's metrics and appends one point; a point's
// quantiles come from the histogram buckets observed since the sample
// `window_samples` earlier (as Prometheus' histogram_quantile over a rate
// would), its rates from the counters since the previous sample. At most
// `capacity` points are kept (5 minutes at 1 s), in a ring.
//
// Start() runs Sample() every `interval` on a thread of its own, so the
// history is there when a dashboard opens, not only while one watches.
//
// Thread-safe: Sample and Since from any thread; Start and Stop from the
// owner's. The metrics must outlive this object; the destructor stops the
// thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "engine/metrics.h"

namespace swiftlet::server {

struct StatsPoint {
  int64_t unix_ms = 0;
  // Seconds; NaN when nothing was observed in the window.
  double ttft_p50 = 0, ttft_p95 = 0;
  double tpot_p50 = 0, tpot_p95 = 0;
  double requests_per_s = 0;       // Finished, any reason.
  double refusals_per_s = 0;       // Refused at submission for load (not for bad input).
  double tokens_per_s = 0;         // Generated.
  double prompt_tokens_per_s = 0;  // Accepted prompt tokens.
  int64_t queue_depth = 0;         // Waiting.
  int64_t running = 0;
  double kv_used_fraction = 0;     // 0..1
};

struct StatsHistoryOptions {
  std::chrono::milliseconds interval{1000};
  int window_samples = 10;  // Quantiles over interval x this.
  int capacity = 300;
};

class StatsHistory {
 public:
  StatsHistory(const EngineMetrics& metrics, StatsHistoryOptions options = {});
  ~StatsHistory();
  StatsHistory(const StatsHistory&) = delete;
  StatsHistory& operator=(const StatsHistory&) = delete;

  // Samples now, and every interval after, until Stop or destruction.
  void Start();
  void Stop();

  // Appends one point stamped `unix_ms`; `now_ns` (monotonic) measures the
  // time since the previous sample for the rates. Tests call it directly.
  void Sample(int64_t now_ns, int64_t unix_ms);

  // Points stamped after `unix_ms` (0: all), oldest first.
  std::vector<StatsPoint> Since(int64_t unix_ms) const;

  const StatsHistoryOptions& options() const { return options_; }

 private:
  struct Raw {
    int64_t now_ns = 0;
    HistogramSnapshot ttft, tpot;
    uint64_t finished = 0, refused = 0, tokens = 0, prompt_tokens = 0;
  };
  Raw Read(int64_t now_ns) const;

  const EngineMetrics& metrics_;
  const StatsHistoryOptions options_;

  mutable std::mutex mu_;
  std::deque<Raw> raw_ ABSL_GUARDED_BY(mu_);  // The last window_samples readings.
  std::deque<StatsPoint> points_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::condition_variable wake_;
  std::thread thread_;
};

}  // namespace swiftlet::server
