#include "server/stats_history.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.h"
#include "core/clock.h"

namespace swiftlet::server {
namespace {

// Observations between two snapshots of one histogram, as a snapshot.
HistogramSnapshot Delta(const HistogramSnapshot& now, const HistogramSnapshot& before) {
  HistogramSnapshot d;
  d.bounds = now.bounds;
  d.cumulative.resize(now.cumulative.size());
  for (size_t i = 0; i < now.cumulative.size(); ++i) {
    // Counters only grow; the guard keeps a torn read from wrapping.
    d.cumulative[i] = now.cumulative[i] >= before.cumulative[i] ? now.cumulative[i] - before.cumulative[i] : 0;
  }
  // Keep the cumulative property whatever the guard did.
  for (size_t i = 1; i < d.cumulative.size(); ++i) d.cumulative[i] = std::max(d.cumulative[i], d.cumulative[i - 1]);
  d.count = d.cumulative.empty() ? 0 : d.cumulative.back();
  d.sum = now.sum - before.sum;
  return d;
}

double Rate(uint64_t now, uint64_t before, double seconds) {
  if (seconds <= 0 || now < before) return 0;
  return static_cast<double>(now - before) / seconds;
}

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

StatsHistory::StatsHistory(const EngineMetrics& metrics, StatsHistoryOptions options)
    : metrics_(metrics), options_(options) {
  SWIFTLET_CHECK(options_.interval.count() > 0 && options_.window_samples >= 1 && options_.capacity >= 1);
}

StatsHistory::~StatsHistory() { Stop(); }

void StatsHistory::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    auto next = std::chrono::steady_clock::now();
    while (!stop_) {
      lock.unlock();
      Sample(SystemClock().NowNs(), UnixMs());
      lock.lock();
      // On a fixed grid, so the points stay an interval apart even when a
      // sample runs late; a sampler that fell a whole interval behind (a
      // stalled machine) skips ahead rather than sampling in a burst.
      next += options_.interval;
      if (const auto now = std::chrono::steady_clock::now(); next < now) next = now + options_.interval;
      wake_.wait_until(lock, next, [this] { return stop_; });
    }
  });
}

void StatsHistory::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatsHistory::Raw StatsHistory::Read(int64_t now_ns) const {
  Raw r;
  r.now_ns = now_ns;
  r.ttft = metrics_.time_to_first_token_seconds.Snapshot();
  r.tpot = metrics_.time_per_output_token_seconds.Snapshot();
  for (size_t i = 0; i < metrics_.requests_finished.size(); ++i) r.finished += metrics_.requests_finished.value_at(i);
  for (size_t i = 0; i < metrics_.refusals.size(); ++i) {
    // A malformed request is the client's mistake, not load.
    if (i == static_cast<size_t>(RefusalReason::kInvalid)) continue;
    r.refused += metrics_.refusals.value_at(i);
  }
  r.tokens = metrics_.generation_tokens_total.Value();
  r.prompt_tokens = metrics_.prompt_tokens_total.Value();
  return r;
}

void StatsHistory::Sample(int64_t now_ns, int64_t unix_ms) {
  Raw raw = Read(now_ns);
  StatsPoint p;
  p.unix_ms = unix_ms;
  p.queue_depth = metrics_.requests_waiting.Value();
  p.running = metrics_.requests_running.Value();
  const int64_t kv_total = metrics_.kv_blocks_total.Value();
  p.kv_used_fraction =
      kv_total > 0 ? std::clamp(static_cast<double>(metrics_.kv_blocks_used.Value()) / kv_total, 0.0, 1.0) : 0.0;

  std::lock_guard<std::mutex> lock(mu_);
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (raw_.empty()) {
    // The first point has no interval behind it: no rates, no quantiles.
    p.ttft_p50 = p.ttft_p95 = p.tpot_p50 = p.tpot_p95 = kNaN;
  } else {
    const Raw& previous = raw_.back();
    const double seconds = static_cast<double>(now_ns - previous.now_ns) / kNsPerSecond;
    p.requests_per_s = Rate(raw.finished, previous.finished, seconds);
    p.refusals_per_s = Rate(raw.refused, previous.refused, seconds);
    p.tokens_per_s = Rate(raw.tokens, previous.tokens, seconds);
    p.prompt_tokens_per_s = Rate(raw.prompt_tokens, previous.prompt_tokens, seconds);
    const Raw& oldest = raw_.front();
    const HistogramSnapshot ttft = Delta(raw.ttft, oldest.ttft);
    const HistogramSnapshot tpot = Delta(raw.tpot, oldest.tpot);
    p.ttft_p50 = ttft.Quantile(0.5);
    p.ttft_p95 = ttft.Quantile(0.95);
    p.tpot_p50 = tpot.Quantile(0.5);
    p.tpot_p95 = tpot.Quantile(0.95);
  }
  raw_.push_back(std::move(raw));
  while (raw_.size() > static_cast<size_t>(options_.window_samples)) raw_.pop_front();
  points_.push_back(p);
  while (points_.size() > static_cast<size_t>(options_.capacity)) points_.pop_front();
}

std::vector<StatsPoint> StatsHistory::Since(int64_t unix_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StatsPoint> out;
  for (const StatsPoint& p : points_) {
    if (p.unix_ms > unix_ms) out.push_back(p);
  }
  return out;
}

}  // namespace swiftlet::server
