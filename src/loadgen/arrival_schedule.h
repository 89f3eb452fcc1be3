// When an open-loop run sends each request: offsets from the start of the
// run, computed before it starts so the sender only sleeps and sends.
//
// Arrivals come from `streams` independent sources (live streams; 1 for the
// plain workloads), each a renewal process (core/arrivals.h) at
// rate_per_s / (fan_out * streams) events per second with the given
// burstiness; the sources are merged in time order. Each event brings
// `fan_out` requests at the same instant (a comment to translate into K
// languages), so the request rate is rate_per_s whatever streams and
// fan_out are. Source s draws from seed + s.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace swiftlet::loadgen {

struct ScheduleOptions {
  double rate_per_s = 1;     // Requests per second, > 0 and finite.
  double burstiness = 1;     // See ArrivalGaps.
  int64_t streams = 1;       // [1, 100000]
  int64_t fan_out = 1;       // [1, 1000]
  int64_t max_requests = 0;  // Stop after this many; 0: no count limit.
  int64_t duration_ns = 0;   // Stop at this offset (exclusive); 0: no time limit.
  uint64_t seed = 1;
};

// At least one limit must be given; the result is capped at kMaxScheduled.
inline constexpr int64_t kMaxScheduled = 10'000'000;

// Non-decreasing offsets in ns, one per request. InvalidArgument naming the
// bad option.
absl::StatusOr<std::vector<int64_t>> OpenLoopSchedule(const ScheduleOptions& options);

}  // namespace swiftlet::loadgen
