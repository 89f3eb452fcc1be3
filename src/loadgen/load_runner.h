// Runs one load point against a server: open loop (requests sent at
// scheduled arrival times, whatever the server does) or closed loop (a
// fixed number of requests in flight, each finished one replaced at once),
// for a request count or a duration, the first requests marked warm-up.
// Each request is recorded by its RequestRecorder; the run also measures
// the client itself (CPU, how late it sent), so a saturated client can be
// told from a slow server.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "loadgen/request_result.h"
#include "loadgen/workload.h"
#include "core/clock.h"
#include "loadgen/load_stats.h"
#include "http/client.h"

namespace swiftlet::loadgen {

enum class LoadMode { kOpenLoop, kClosedLoop };

struct LoadPoint {
  LoadMode mode = LoadMode::kOpenLoop;
  double rate_per_s = 1;     // Open loop: requests per second.
  double burstiness = 1;     // Open loop: see core/arrivals.h.
  int64_t streams = 1;       // Open loop: independent sources (live-comments).
  int64_t concurrency = 1;   // Closed loop: requests in flight, [1, 100000].
  // Stop after this many requests, or sending after this long; one of the
  // two (or both: whichever comes first).
  int64_t requests = 0;
  int64_t duration_ns = 0;
  int64_t warmup_requests = 0;  // The first ones sent; left out of the figures.
  // After the last send, how long to wait for answers; the rest are then
  // cancelled (kind "cancelled"). > 0.
  int64_t drain_timeout_ns = 120 * kNsPerSecond;
  uint64_t seed = 1;
  // The workload index of this point's first request: points of a sweep
  // start far apart, so each asks fresh prompts (a prefix cache warmed by
  // one point does not flatter the next). >= 0.
  int64_t first_workload_index = 0;
  // Sent as "Authorization: Bearer KEY" with every request; empty: none.
  std::string api_key;
};

absl::Status ValidateLoadPoint(const LoadPoint& point);

struct ClientUsage {
  double wall_s = 0;
  double cpu_s = 0;              // This process, user + system.
  double cpu_pct_of_core = 0;    // 100 * cpu_s / wall_s.
  LatencySummary send_lag;       // Open loop: send time - scheduled arrival.
  int64_t peak_in_flight = 0;
};

struct PointResult {
  LoadPoint point;
  std::vector<RequestResult> requests;  // In send order.
  ClientUsage client;
  int64_t start_ns = 0;                 // Clock reading at the first arrival.
};

// Called from the runner's thread about every 100 ms and once at the end.
// total is 0 when not known in advance (a closed loop for a duration).
struct Progress {
  int64_t sent = 0;
  int64_t done = 0;
  int64_t total = 0;
};
using ProgressFn = std::function<void(const Progress&)>;

// Blocks until the point is done. `point` must pass ValidateLoadPoint
// (checked). `clock` times everything (the client's callbacks read it on
// the I/O thread); `sleep_until` waits on its scale.
PointResult RunLoadPoint(http::HttpClient& client, const Workload& workload,
                         const LoadPoint& point, const Clock& clock, const SleepFn& sleep_until,
                         const ProgressFn& progress);

}  // namespace swiftlet::loadgen
