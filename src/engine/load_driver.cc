#include "engine/load_driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "core/check.h"

namespace swiftlet {
namespace {

double PerSecond(double n, int64_t duration_ns) {
  return duration_ns > 0 ? n * 1e9 / static_cast<double>(duration_ns) : 0.0;
}

// Nearest rank: the ceil(p * n / 100)-th smallest, 1-based.
double NearestRank(const std::vector<double>& sorted, int p) {
  const auto n = static_cast<int64_t>(sorted.size());
  const int64_t rank = std::max<int64_t>(1, (p * n + 99) / 100);
  return sorted[static_cast<size_t>(rank - 1)];
}

// Records shared by the runner and the sinks; outlives RunOpenLoop when an
// engine still holds a sink.
struct RunState {
  RunState(const Clock& c, size_t n) : clock(c), records(n) {}
  const Clock& clock;
  std::mutex mu;
  std::vector<RequestRecord> records ABSL_GUARDED_BY(mu);
  int64_t completed ABSL_GUARDED_BY(mu) = 0;  // Records with finish_ns set.
};

class RecordingSink final : public RequestSink {
 public:
  RecordingSink(std::shared_ptr<RunState> state, size_t index)
      : state_(std::move(state)), index_(index) {}

  void OnTokens(const TokenEvent& event) override {
    if (event.choice != 0 || event.ids.empty()) return;
    const int64_t now = state_->clock.NowNs();
    std::lock_guard<std::mutex> lock(state_->mu);
    RequestRecord& r = state_->records[index_];
    if (r.first_token_ns < 0) r.first_token_ns = now;
    r.token_times_ns.push_back(now);
    r.output_tokens += static_cast<int64_t>(event.ids.size());
  }

  void OnFinish(int32_t choice, FinishReason reason, const std::string&) override {
    if (choice != 0) return;
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->records[index_].reason = reason;
  }

  void OnComplete(const Usage&, const Timings&) override {
    const int64_t now = state_->clock.NowNs();
    std::lock_guard<std::mutex> lock(state_->mu);
    RequestRecord& r = state_->records[index_];
    if (r.finish_ns >= 0) return;  // A second OnComplete would be an engine bug; count once.
    r.finish_ns = now;
    state_->completed += 1;
  }

 private:
  std::shared_ptr<RunState> state_;
  size_t index_;
};

}  // namespace

LatencySummary SummarizeLatencies(std::vector<double> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = static_cast<int64_t>(samples.size());
  double total = 0;
  for (double v : samples) total += v;
  s.mean_ns = total / static_cast<double>(samples.size());
  s.p50_ns = NearestRank(samples, 50);
  s.p90_ns = NearestRank(samples, 90);
  s.p95_ns = NearestRank(samples, 95);
  s.p99_ns = NearestRank(samples, 99);
  s.max_ns = samples.back();
  return s;
}

LoadReport Summarize(const std::vector<RequestRecord>& records, const SloTargets& slo,
                     int64_t duration_ns) {
  LoadReport rep;
  rep.duration_ns = duration_ns;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t output_tokens = 0;
  for (const RequestRecord& r : records) {
    if (r.warmup) continue;
    rep.offered += 1;
    if (r.refused) {
      rep.refused += 1;
      rep.max_refusal_decision_ns = std::max(rep.max_refusal_decision_ns, r.refused_after_ns);
      continue;
    }
    const bool finished = r.finish_ns >= 0 &&
                          (r.reason == FinishReason::kStop || r.reason == FinishReason::kLength);
    if (!finished) {
      rep.errors += 1;
      continue;
    }
    rep.finished += 1;
    output_tokens += r.output_tokens;
    const int64_t e2e_ns = r.finish_ns - r.arrival_ns;
    e2e.push_back(static_cast<double>(e2e_ns));
    // With no token at all (end of sequence first), the client's first
    // answer is the end of the response.
    const int64_t ttft_ns = r.first_token_ns >= 0 ? r.first_token_ns - r.arrival_ns : e2e_ns;
    if (r.first_token_ns >= 0) ttft.push_back(static_cast<double>(ttft_ns));
    bool met = (slo.ttft_ns == 0 || ttft_ns <= slo.ttft_ns) &&
               (slo.e2e_ns == 0 || e2e_ns <= slo.e2e_ns);
    if (r.output_tokens >= 2 && !r.token_times_ns.empty() && r.first_token_ns >= 0) {
      const int64_t span = r.token_times_ns.back() - r.first_token_ns;
      tpot.push_back(static_cast<double>(span) / static_cast<double>(r.output_tokens - 1));
      // span / (n - 1) <= target, without rounding.
      if (slo.tpot_ns != 0 && span > slo.tpot_ns * (r.output_tokens - 1)) met = false;
    }
    for (size_t i = 1; i < r.token_times_ns.size(); ++i) {
      itl.push_back(static_cast<double>(r.token_times_ns[i] - r.token_times_ns[i - 1]));
    }
    rep.met_slo += met;
  }
  rep.ttft = SummarizeLatencies(std::move(ttft));
  rep.tpot = SummarizeLatencies(std::move(tpot));
  rep.itl = SummarizeLatencies(std::move(itl));
  rep.e2e = SummarizeLatencies(std::move(e2e));
  rep.request_throughput_per_s = PerSecond(static_cast<double>(rep.finished), duration_ns);
  rep.output_token_throughput_per_s = PerSecond(static_cast<double>(output_tokens), duration_ns);
  rep.goodput_per_s = PerSecond(static_cast<double>(rep.met_slo), duration_ns);
  rep.slo_attainment_pct =
      rep.offered > 0 ? 100.0 * static_cast<double>(rep.met_slo) / static_cast<double>(rep.offered)
                      : 0.0;
  return rep;
}

int64_t MeasurementWindowNs(const std::vector<RequestRecord>& records) {
  bool any = false;
  int64_t start = 0, end = 0;
  for (const RequestRecord& r : records) {
    if (r.warmup) continue;
    start = any ? std::min(start, r.arrival_ns) : r.arrival_ns;
    int64_t last = r.arrival_ns;
    if (r.refused) last = std::max(last, r.arrival_ns + r.refused_after_ns);
    if (!r.token_times_ns.empty()) last = std::max(last, r.token_times_ns.back());
    if (r.finish_ns >= 0) last = std::max(last, r.finish_ns);
    end = any ? std::max(end, last) : last;
    any = true;
  }
  return any ? end - start : 0;
}

SleepFn SystemSleep() {
  return [](int64_t until_ns) {
    std::this_thread::sleep_until(
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(until_ns)));
  };
}

absl::Status ValidateOpenLoopPlan(const OpenLoopPlan& p) {
  if (!(p.rate_per_s > 0)) return absl::InvalidArgumentError("rate_per_s: must be > 0");
  if (!(p.burstiness > 0) || !std::isfinite(p.burstiness)) {
    return absl::InvalidArgumentError("burstiness: must be finite and > 0");
  }
  if (p.requests < 0) return absl::InvalidArgumentError("requests: must be >= 0");
  if (p.warmup_requests < 0 || p.warmup_requests > p.requests) {
    return absl::InvalidArgumentError("warmup_requests: must be between 0 and requests");
  }
  if (!p.make_request) return absl::InvalidArgumentError("make_request: must be set");
  if (p.drain_timeout_ns <= 0) return absl::InvalidArgumentError("drain_timeout_ns: must be > 0");
  if (p.drain_poll_ns <= 0) return absl::InvalidArgumentError("drain_poll_ns: must be > 0");
  return absl::OkStatus();
}

std::vector<RequestRecord> RunOpenLoop(RequestQueue& queue, const Clock& clock,
                                       const SleepFn& sleep_until, const OpenLoopPlan& plan) {
  SWIFTLET_CHECK(ValidateOpenLoopPlan(plan).ok());
  const auto n = static_cast<size_t>(plan.requests);
  auto state = std::make_shared<RunState>(clock, n);

  // One distribution object for the whole run: gamma_distribution keeps
  // state between draws, so a fresh one per draw would change the sequence.
  std::mt19937_64 rng(plan.seed);
  std::exponential_distribution<double> exponential(std::isinf(plan.rate_per_s) ? 1.0
                                                                                : plan.rate_per_s);
  std::gamma_distribution<double> gamma(1.0 / plan.burstiness, plan.burstiness / plan.rate_per_s);
  auto next_gap_ns = [&]() -> int64_t {
    if (std::isinf(plan.rate_per_s)) return 0;
    const double s = plan.burstiness == 1.0 ? exponential(rng) : gamma(rng);
    return std::llround(std::min(s * 1e9, 1e18));  // 1e18 ns: 31 years, keeps the sum in range.
  };

  std::vector<uint64_t> ids(n, 0);
  std::vector<bool> accepted(n, false);
  int64_t n_accepted = 0;
  int64_t arrival = clock.NowNs();
  for (size_t i = 0; i < n; ++i) {
    arrival += next_gap_ns();
    if (clock.NowNs() < arrival) sleep_until(arrival);
    Request request = plan.make_request(static_cast<int64_t>(i));
    request.sink = std::make_shared<RecordingSink>(state, i);
    {
      std::lock_guard<std::mutex> lock(state->mu);
      RequestRecord& r = state->records[i];
      r.index = static_cast<int64_t>(i);
      r.warmup = static_cast<int64_t>(i) < plan.warmup_requests;
      r.arrival_ns = arrival;
    }
    // Not under the lock: a queue may deliver events before Submit returns.
    const SubmitResult result = queue.Submit(std::move(request));
    const int64_t decided = clock.NowNs();
    if (result.accepted()) {
      ids[i] = result.id;
      accepted[i] = true;
      n_accepted += 1;
    } else {
      std::lock_guard<std::mutex> lock(state->mu);
      RequestRecord& r = state->records[i];
      r.refused = true;
      r.refusal = result.refused;
      r.refused_after_ns = decided - arrival;
    }
  }

  const int64_t deadline = clock.NowNs() + plan.drain_timeout_ns;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(state->mu);
      if (state->completed >= n_accepted) break;
    }
    const int64_t now = clock.NowNs();
    if (now >= deadline) break;
    sleep_until(std::min(deadline, now + plan.drain_poll_ns));
  }

  std::vector<uint64_t> unfinished;
  std::vector<RequestRecord> out;
  {
    std::lock_guard<std::mutex> lock(state->mu);
    for (size_t i = 0; i < n; ++i) {
      if (accepted[i] && state->records[i].finish_ns < 0) unfinished.push_back(ids[i]);
    }
    out = state->records;
  }
  // Outside the lock: Cancel may deliver events at once.
  for (uint64_t id : unfinished) queue.Cancel(id);
  return out;
}

}  // namespace swiftlet
