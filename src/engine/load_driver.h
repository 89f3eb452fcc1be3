// An in-process load driver: open-loop (Poisson) arrivals straight into a
// RequestQueue, with the latency definitions of DESIGN.md, until the HTTP
// server and the load generator (bench/) exist. Two parts:
//
//   RunOpenLoop  submits requests at seeded random arrival times and records
//                what each request's sink sees, timed by an injected Clock;
//   Summarize    turns those records into percentiles, throughput and
//                goodput. It is pure arithmetic on the records.
//
// Times are nanoseconds on the Clock's scale.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "core/clock.h"
#include "engine/request.h"

namespace swiftlet {

// What one request went through, seen from the client side. The driver
// follows choice 0 only (plans should use n = 1).
struct RequestRecord {
  int64_t index = 0;
  bool warmup = false;   // Left out of Summarize.
  int64_t arrival_ns = 0;  // Scheduled arrival; the request is submitted then.
  int64_t first_token_ns = -1;  // First token event; -1: none.
  int64_t finish_ns = -1;       // OnComplete; -1: never completed.
  // One per token event (an event with ids; a text-only event, such as the
  // held text released at end of sequence, is not a token).
  std::vector<int64_t> token_times_ns;
  int64_t output_tokens = 0;  // Ids in those events.
  bool refused = false;
  RefusalReason refusal = RefusalReason::kNone;
  int64_t refused_after_ns = 0;  // Refusals: Submit's return - arrival.
  FinishReason reason = FinishReason::kError;  // From OnFinish; kError until then.
};

// Targets in nanoseconds; 0: none.
struct SloTargets {
  int64_t ttft_ns = 0;
  int64_t tpot_ns = 0;
  int64_t e2e_ns = 0;
};

// Percentiles by nearest rank: the p-th percentile of n sorted samples is
// the ceil(p * n / 100)-th smallest (1-based), so it is always a sample.
// All zero when count is 0.
struct LatencySummary {
  int64_t count = 0;
  double mean_ns = 0;
  double p50_ns = 0;
  double p90_ns = 0;
  double p95_ns = 0;
  double p99_ns = 0;
  double max_ns = 0;
};

LatencySummary SummarizeLatencies(std::vector<double> samples_ns);

struct LoadReport {
  int64_t offered = 0;   // Records that are not warmup.
  int64_t finished = 0;  // Completed with finish reason stop or length.
  int64_t refused = 0;
  // Accepted but not finished: error, cancelled, or not complete when the
  // driver stopped waiting.
  int64_t errors = 0;
  int64_t met_slo = 0;  // Finished and within every target.

  // Over finished requests: TTFT = first token - arrival; TPOT = (last token
  // - first token) / (output tokens - 1) for those with >= 2 tokens; ITL =
  // every gap between consecutive token events, pooled; e2e = finish -
  // arrival.
  LatencySummary ttft, tpot, itl, e2e;

  int64_t duration_ns = 0;
  // Per second of duration_ns (0 when duration_ns <= 0).
  double request_throughput_per_s = 0;       // Finished requests.
  double output_token_throughput_per_s = 0;  // Their output tokens.
  double goodput_per_s = 0;                  // Requests that met every target.
  double slo_attainment_pct = 0;             // 100 * met_slo / offered (0 if none).
  int64_t max_refusal_decision_ns = 0;       // Largest refused_after_ns.
};

// A request meets the targets when it finished and each given target holds
// (value <= target). Refused and errored requests are misses. One with a
// single output token has no TPOT and meets the TPOT target. `duration_ns`
// is the measurement window (see MeasurementWindowNs).
LoadReport Summarize(const std::vector<RequestRecord>& records, const SloTargets& slo,
                     int64_t duration_ns);

// From the first non-warmup arrival to the last thing seen of a non-warmup
// request (its finish, its refusal, or its last token); 0 if none.
int64_t MeasurementWindowNs(const std::vector<RequestRecord>& records);

// Blocks until `clock` reads at least until_ns (returns at once when past).
// A real one sleeps; a test's advances its FakeClock.
using SleepFn = std::function<void(int64_t until_ns)>;
// Sleeps on std::chrono::steady_clock, the scale of SystemClock().
SleepFn SystemSleep();

struct OpenLoopPlan {
  // Mean arrivals per second, > 0; +infinity submits everything at once.
  double rate_per_s = 1;
  // Squared coefficient of variation of the gaps, > 0. 1: exponential gaps
  // (a Poisson process); otherwise gamma gaps with shape 1 / burstiness and
  // the same mean, so > 1 is burstier and < 1 more regular. (vLLM's
  // --burstiness is the reciprocal: its shape.)
  double burstiness = 1;
  int64_t requests = 0;         // >= 0.
  int64_t warmup_requests = 0;  // The first ones, marked warmup; <= requests.
  uint64_t seed = 0;
  // Builds request `index`; its sink is replaced by the driver's. Its
  // received_ns is left as built (0: the engine stamps it at Submit, so the
  // engine's own TTFT starts there, not at the scheduled arrival).
  std::function<Request(int64_t index)> make_request;
  // After the last submission, how long to wait for accepted requests to
  // complete; those still running then are cancelled and recorded
  // unfinished. > 0.
  int64_t drain_timeout_ns = 60 * kNsPerSecond;
  // How often the drain wait looks (through sleep_until); > 0.
  int64_t drain_poll_ns = kNsPerMs;
};

// InvalidArgument naming the first bad field.
absl::Status ValidateOpenLoopPlan(const OpenLoopPlan& plan);

// Submits plan.requests requests into `queue` on the calling thread. Gaps
// are drawn from a std::mt19937_64 seeded with plan.seed: the i-th gap is
// std::exponential_distribution<double>(rate_per_s) (burstiness 1) or
// std::gamma_distribution<double>(1 / burstiness, burstiness / rate_per_s),
// in seconds, rounded to the nearest nanosecond; one distribution object
// draws all gaps of a run (+infinite rate: all gaps 0). Request i arrives at
// start + gap_0 + ... + gap_i, start being clock.NowNs() on entry; the
// driver sleeps until then and submits it. Arrivals keep their schedule
// when the driver falls behind (open loop: a slow Submit delays nobody's
// clock), and latencies count from the scheduled arrival.
//
// Sink callbacks may come on any thread (the engine's), also during Submit;
// the records are guarded by a mutex. The sinks stay valid after return, so
// a late event of a cancelled request is harmless. `plan` must pass
// ValidateOpenLoopPlan (checked). `queue` and `clock` must outlive the
// requests.
std::vector<RequestRecord> RunOpenLoop(RequestQueue& queue, const Clock& clock,
                                       const SleepFn& sleep_until, const OpenLoopPlan& plan);

}  // namespace swiftlet
