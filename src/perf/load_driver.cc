#include "perf/load_driver.h"

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

absl::Status ValidateOpenLoopPlan(const OpenLoopPlan& p) {
  for (size_t i = 0; i < p.arrivals_ns.size(); ++i) {
    if (p.arrivals_ns[i] < 0 || (i > 0 && p.arrivals_ns[i] < p.arrivals_ns[i - 1])) {
      return absl::InvalidArgumentError("arrivals_ns: must be non-negative and non-decreasing");
    }
  }
  if (p.warmup_requests < 0 || p.warmup_requests > static_cast<int64_t>(p.arrivals_ns.size())) {
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
  const size_t n = plan.arrivals_ns.size();
  auto state = std::make_shared<RunState>(clock, n);

  std::vector<uint64_t> ids(n, 0);
  std::vector<bool> accepted(n, false);
  int64_t n_accepted = 0;
  const int64_t start = clock.NowNs();
  for (size_t i = 0; i < n; ++i) {
    const int64_t arrival = start + plan.arrivals_ns[i];
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
