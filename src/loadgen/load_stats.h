// Latency statistics of a load test, with the definitions of DESIGN.md:
// what each request went through as timestamps (RequestTimeline), and the
// percentiles, throughput and goodput computed from them (Summarize). Pure
// arithmetic on the timestamps, shared by the in-process engine driver and
// the HTTP load generator so both report the same figures the same way.
//
// Times are nanoseconds on one clock's scale (see core/clock.h).
#pragma once

#include <cstdint>
#include <vector>

namespace swiftlet::loadgen {

enum class RequestOutcome {
  kFinished,  // Completed normally (finish reason stop or length).
  kRefused,   // Refused for load before any work (429 / engine refusal).
  kFailed,    // Anything else: an error, cancelled, or never completed.
};

// One request seen from the client side. The driver fills it in as events
// arrive; Summarize reads it.
struct RequestTimeline {
  bool warmup = false;          // Left out of Summarize and the window.
  int64_t arrival_ns = 0;       // Scheduled arrival; latencies count from here.
  int64_t first_token_ns = -1;  // First token; -1: none.
  int64_t finish_ns = -1;       // End of the response; -1: never.
  // One per token event (a streamed chunk carrying output). A chunk may
  // carry several tokens; output_tokens counts the tokens themselves.
  std::vector<int64_t> token_times_ns;
  int64_t output_tokens = 0;
  RequestOutcome outcome = RequestOutcome::kFailed;
  int64_t refused_after_ns = 0;  // Refusals: decision time - arrival.
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
  int64_t offered = 0;   // Timelines that are not warmup.
  int64_t finished = 0;  // Outcome kFinished.
  int64_t refused = 0;   // Outcome kRefused.
  int64_t errors = 0;    // Outcome kFailed.
  int64_t met_slo = 0;   // Finished and within every target.

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
// (value <= target). Refused and failed requests are misses. One with a
// single output token has no TPOT and meets the TPOT target; one with no
// token event at all has its TTFT taken as its end. `duration_ns` is the
// measurement window (see MeasurementWindowNs).
LoadReport Summarize(const std::vector<RequestTimeline>& timelines, const SloTargets& slo,
                     int64_t duration_ns);

// From the first non-warmup arrival to the last thing seen of a non-warmup
// request (its finish, its refusal, or its last token); 0 if none.
int64_t MeasurementWindowNs(const std::vector<RequestTimeline>& timelines);

}  // namespace swiftlet::loadgen
