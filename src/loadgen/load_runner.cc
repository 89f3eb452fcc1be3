#include "loadgen/load_runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "loadgen/arrival_schedule.h"
#include "core/check.h"

namespace swiftlet::loadgen {
namespace {

constexpr int64_t kProgressEveryNs = 100 * kNsPerMs;
constexpr int64_t kPollNs = 5 * kNsPerMs;
// After cancelling the stragglers, how long their on_done may take.
constexpr int64_t kCancelWaitNs = 5 * kNsPerSecond;

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// Shared between the runner thread and the client's callbacks; kept alive
// by both, since a callback may still run after a cancelled run returns.
struct RunState {
  RunState(http::HttpClient& c, const Workload& w, const LoadPoint& p, const Clock& k)
      : client(c), workload(w), point(p), clock(k) {}
  http::HttpClient& client;
  const Workload& workload;
  const LoadPoint point;
  const Clock& clock;

  std::mutex mu;
  // A deque: recorders stay where they are while more are added.
  std::deque<RequestRecorder> recorders ABSL_GUARDED_BY(mu);
  std::vector<uint64_t> ids ABSL_GUARDED_BY(mu);
  int64_t done ABSL_GUARDED_BY(mu) = 0;
  int64_t in_flight ABSL_GUARDED_BY(mu) = 0;
  int64_t peak_in_flight ABSL_GUARDED_BY(mu) = 0;
  bool stop_sending ABSL_GUARDED_BY(mu) = false;  // Closed loop: no replacements.
  int64_t closed_deadline_ns = 0;                 // Closed loop with a duration.
};

bool ClosedLoopHasMore(RunState& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s.mu) {
  if (s.stop_sending) return false;
  const auto sent = static_cast<int64_t>(s.recorders.size());
  if (s.point.requests > 0 && sent >= s.point.requests) return false;
  if (s.point.duration_ns > 0 && s.clock.NowNs() >= s.closed_deadline_ns) return false;
  return true;
}

void SendOne(const std::shared_ptr<RunState>& state, int64_t arrival_ns);

void OnRequestDone(const std::shared_ptr<RunState>& state, size_t index, absl::Status status,
                   const http::ClientResponse& response) {
  bool send_next = false;
  {
    std::lock_guard lock(state->mu);
    RequestRecorder& r = state->recorders[index];
    if (r.done()) return;
    r.OnDone(status, response);
    state->done += 1;
    state->in_flight -= 1;
    send_next = state->point.mode == LoadMode::kClosedLoop && ClosedLoopHasMore(*state);
  }
  if (send_next) SendOne(state, state->clock.NowNs());
}

// Adds a recorder and hands the request to the client. Any thread.
void SendOne(const std::shared_ptr<RunState>& state, int64_t arrival_ns) {
  size_t index = 0;
  PlannedRequest planned;
  {
    std::lock_guard lock(state->mu);
    index = state->recorders.size();
    planned = state->workload.Make(state->point.first_workload_index + static_cast<int64_t>(index));
    state->recorders.emplace_back(state->clock, static_cast<int64_t>(index), arrival_ns,
                                  static_cast<int64_t>(index) < state->point.warmup_requests,
                                  planned.output_tokens);
    state->recorders.back().OnSent();
    state->ids.push_back(0);
    state->in_flight += 1;
    state->peak_in_flight = std::max(state->peak_in_flight, state->in_flight);
  }
  http::ClientRequest request;
  request.method = "POST";
  request.target = planned.target;
  request.body = std::move(planned.body);
  if (!state->point.api_key.empty()) request.headers.Add("Authorization", "Bearer " + state->point.api_key);
  http::ClientCallbacks callbacks;
  callbacks.on_headers = [state, index](int status, const http::Headers& headers) {
    std::lock_guard lock(state->mu);
    state->recorders[index].OnHeaders(status, headers);
  };
  callbacks.on_event = [state, index](std::string_view data) {
    std::lock_guard lock(state->mu);
    state->recorders[index].OnEvent(data);
  };
  callbacks.on_done = [state, index](absl::Status status, http::ClientResponse response) {
    OnRequestDone(state, index, std::move(status), response);
  };
  const uint64_t id = state->client.Send(std::move(request), std::move(callbacks));
  std::lock_guard lock(state->mu);
  state->ids[index] = id;
}

Progress ReadProgress(RunState& s, int64_t total) {
  std::lock_guard lock(s.mu);
  return {static_cast<int64_t>(s.recorders.size()), s.done, total};
}

}  // namespace

absl::Status ValidateLoadPoint(const LoadPoint& p) {
  if (p.requests < 0) return absl::InvalidArgumentError("requests: must be >= 0");
  if (p.duration_ns < 0) return absl::InvalidArgumentError("duration: must be >= 0");
  if (p.requests == 0 && p.duration_ns == 0) {
    return absl::InvalidArgumentError("give a request count or a duration");
  }
  if (p.requests > kMaxScheduled) {
    return absl::InvalidArgumentError("requests: at most 10000000");
  }
  if (p.warmup_requests < 0 || (p.requests > 0 && p.warmup_requests >= p.requests)) {
    return absl::InvalidArgumentError("warmup: must be >= 0 and fewer than the requests");
  }
  if (p.first_workload_index < 0) return absl::InvalidArgumentError("first workload index: must be >= 0");
  if (p.drain_timeout_ns <= 0) return absl::InvalidArgumentError("drain timeout: must be > 0");
  if (p.mode == LoadMode::kClosedLoop) {
    if (p.concurrency < 1 || p.concurrency > 100000) {
      return absl::InvalidArgumentError("concurrency: must be in [1, 100000]");
    }
    return absl::OkStatus();
  }
  ScheduleOptions s;
  s.rate_per_s = p.rate_per_s;
  s.burstiness = p.burstiness;
  s.streams = p.streams;
  s.max_requests = 1;
  return OpenLoopSchedule(s).status();
}

PointResult RunLoadPoint(http::HttpClient& client, const Workload& workload,
                         const LoadPoint& point, const Clock& clock, const SleepFn& sleep_until,
                         const ProgressFn& progress) {
  SWIFTLET_CHECK(ValidateLoadPoint(point).ok());
  auto state = std::make_shared<RunState>(client, workload, point, clock);
  PointResult out;
  out.point = point;
  const double cpu_start = CpuSeconds();
  const int64_t start = clock.NowNs();
  out.start_ns = start;
  int64_t last_progress = start;
  auto tick = [&](int64_t total) {
    const int64_t now = clock.NowNs();
    if (progress && now - last_progress >= kProgressEveryNs) {
      last_progress = now;
      progress(ReadProgress(*state, total));
    }
  };

  int64_t total = point.requests;
  if (point.mode == LoadMode::kOpenLoop) {
    ScheduleOptions s;
    s.rate_per_s = point.rate_per_s;
    s.burstiness = point.burstiness;
    s.streams = point.streams;
    s.fan_out = workload.fan_out();
    s.max_requests = point.requests;
    s.duration_ns = point.duration_ns;
    s.seed = point.seed;
    const std::vector<int64_t> schedule = *OpenLoopSchedule(s);
    total = static_cast<int64_t>(schedule.size());
    for (int64_t offset : schedule) {
      const int64_t arrival = start + offset;
      // Sleep in slices so progress keeps moving through long gaps.
      while (clock.NowNs() < arrival) {
        sleep_until(std::min(arrival, clock.NowNs() + kProgressEveryNs));
        tick(total);
      }
      SendOne(state, arrival);
      tick(total);
    }
  } else {
    {
      std::lock_guard lock(state->mu);
      state->closed_deadline_ns = point.duration_ns > 0 ? start + point.duration_ns : 0;
    }
    const int64_t first = point.requests > 0 ? std::min(point.concurrency, point.requests)
                                             : point.concurrency;
    for (int64_t i = 0; i < first; ++i) SendOne(state, clock.NowNs());
    // Replacements are sent from the callbacks until the count or the
    // duration runs out.
    while (true) {
      {
        std::lock_guard lock(state->mu);
        if (!ClosedLoopHasMore(*state) || state->in_flight == 0) break;
      }
      sleep_until(clock.NowNs() + kPollNs);
      tick(total);
    }
    std::lock_guard lock(state->mu);
    state->stop_sending = true;
  }

  // Drain: wait for every answer, then cancel what is left.
  const int64_t deadline = clock.NowNs() + point.drain_timeout_ns;
  auto all_done = [&] {
    std::lock_guard lock(state->mu);
    return state->done >= static_cast<int64_t>(state->recorders.size());
  };
  while (!all_done() && clock.NowNs() < deadline) {
    sleep_until(std::min(deadline, clock.NowNs() + kPollNs));
    tick(total);
  }
  if (!all_done()) {
    std::vector<uint64_t> unfinished;
    {
      std::lock_guard lock(state->mu);
      for (size_t i = 0; i < state->recorders.size(); ++i) {
        if (!state->recorders[i].done()) unfinished.push_back(state->ids[i]);
      }
    }
    for (uint64_t id : unfinished) client.Cancel(id);
    const int64_t cancel_deadline = clock.NowNs() + kCancelWaitNs;
    while (!all_done() && clock.NowNs() < cancel_deadline) sleep_until(clock.NowNs() + kPollNs);
  }

  const int64_t end = clock.NowNs();
  std::vector<double> lags;
  {
    std::lock_guard lock(state->mu);
    state->stop_sending = true;
    out.requests.reserve(state->recorders.size());
    for (const RequestRecorder& r : state->recorders) {
      out.requests.push_back(r.result());
      RequestResult& res = out.requests.back();
      // Never answered even after the cancel: a failure all the same.
      if (!r.done()) {
        res.kind = "unfinished";
        res.timeline.outcome = RequestOutcome::kFailed;
      }
      if (point.mode == LoadMode::kOpenLoop && res.sent_ns >= 0) {
        lags.push_back(static_cast<double>(res.sent_ns - res.timeline.arrival_ns));
      }
    }
    out.client.peak_in_flight = state->peak_in_flight;
  }
  out.client.wall_s = static_cast<double>(end - start) / 1e9;
  out.client.cpu_s = CpuSeconds() - cpu_start;
  out.client.cpu_pct_of_core =
      out.client.wall_s > 0 ? 100.0 * out.client.cpu_s / out.client.wall_s : 0;
  out.client.send_lag = SummarizeLatencies(std::move(lags));
  if (progress) progress(ReadProgress(*state, total));
  return out;
}

}  // namespace swiftlet::loadgen
