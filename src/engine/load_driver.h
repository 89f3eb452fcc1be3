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
#include "core/load_stats.h"
#include "engine/request.h"

namespace swiftlet {

// What one request went through, seen from the client side: the shared
// timeline (core/load_stats.h) plus what the engine said. The driver
// follows choice 0 only (plans should use n = 1). A token event is an event
// with ids; a text-only event (held text released at end of sequence) is
// not a token. outcome is kFinished when OnComplete came after a stop or
// length finish, kRefused when Submit refused, kFailed otherwise.
struct RequestRecord : RequestTimeline {
  int64_t index = 0;
  RefusalReason refusal = RefusalReason::kNone;
  FinishReason reason = FinishReason::kError;  // From OnFinish; kError until then.
};

// The timelines of `records` (sliced copies), for core's Summarize.
std::vector<RequestTimeline> Timelines(const std::vector<RequestRecord>& records);

inline LoadReport Summarize(const std::vector<RequestRecord>& records, const SloTargets& slo,
                            int64_t duration_ns) {
  return Summarize(Timelines(records), slo, duration_ns);
}
inline int64_t MeasurementWindowNs(const std::vector<RequestRecord>& records) {
  return MeasurementWindowNs(Timelines(records));
}


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
// are drawn by ArrivalGaps(rate_per_s, burstiness, seed) (core/arrivals.h),
// the i-th draw being gap_i. Request i arrives at
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
