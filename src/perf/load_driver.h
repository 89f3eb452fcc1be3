// The in-process load driver behind `swiftlet tools drive`: requests
// submitted straight into a RequestQueue (the engine) at planned arrival
// times, open loop, with what each request's sink saw recorded on an
// injected Clock. It separates the engine's capacity from the HTTP
// transport's; `swiftlet bench` measures the same thing through the server.
//
// The arrival times, the prompts and the statistics are the load
// generator's (loadgen/arrival_schedule.h, loadgen/load_stats.h): the CLI
// plans the arrivals, hands them here, and summarises the records, so both
// tools report the same figures the same way.
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
// follows choice 0 only (plans should use n = 1). A token event is an event
// with ids; a text-only event (held text released at end of sequence) is
// not a token.
struct RequestRecord {
  int64_t index = 0;
  bool warmup = false;
  int64_t arrival_ns = 0;       // Planned arrival.
  int64_t first_token_ns = -1;  // -1: none.
  int64_t finish_ns = -1;       // OnComplete; -1: never.
  std::vector<int64_t> token_times_ns;  // One per token event.
  int64_t output_tokens = 0;
  bool refused = false;            // Submit refused it.
  RefusalReason refusal = RefusalReason::kNone;
  int64_t refused_after_ns = 0;    // Refusals: decision time - arrival.
  FinishReason reason = FinishReason::kError;  // From OnFinish; kError until then.

  // Completed with finish reason stop or length.
  bool finished_ok() const {
    return finish_ns >= 0 && (reason == FinishReason::kStop || reason == FinishReason::kLength);
  }
};

struct OpenLoopPlan {
  // When each request arrives, in ns from the start of the run,
  // non-decreasing (loadgen's OpenLoopSchedule plans them).
  std::vector<int64_t> arrivals_ns;
  int64_t warmup_requests = 0;  // The first ones, marked warmup; <= arrivals.
  // Builds request `index`; its sink is replaced by the driver's. Its
  // received_ns is left as built (0: the engine stamps it at Submit).
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

// Submits one request per planned arrival into `queue` on the calling
// thread: request i at start + arrivals_ns[i], start being clock.NowNs() on
// entry. The driver sleeps until then and submits it; arrivals keep their
// schedule when the driver falls behind (open loop: a slow Submit delays
// nobody's clock), and latencies count from the planned arrival.
//
// Sink callbacks may come on any thread (the engine's), also during Submit;
// the records are guarded by a mutex. The sinks stay valid after return, so
// a late event of a cancelled request is harmless. `plan` must pass
// ValidateOpenLoopPlan (checked). `queue` and `clock` must outlive the
// requests.
std::vector<RequestRecord> RunOpenLoop(RequestQueue& queue, const Clock& clock,
                                       const SleepFn& sleep_until, const OpenLoopPlan& plan);

}  // namespace swiftlet
