#include "loadgen/arrival_schedule.h"

#include <cmath>
#include <functional>
#include <queue>
#include <utility>

#include "loadgen/arrivals.h"

namespace swiftlet::loadgen {
namespace {

// Offsets saturate here (about 146 years), so sums of huge gaps never wrap.
constexpr int64_t kNever = int64_t{1} << 62;

}  // namespace

absl::StatusOr<std::vector<int64_t>> OpenLoopSchedule(const ScheduleOptions& o) {
  if (!(o.rate_per_s > 0) || !std::isfinite(o.rate_per_s)) {
    return absl::InvalidArgumentError("rate: must be finite and > 0");
  }
  if (absl::Status s = ArrivalGaps::Validate(o.rate_per_s, o.burstiness); !s.ok()) return s;
  if (o.streams < 1 || o.streams > 100000) {
    return absl::InvalidArgumentError("streams: must be in [1, 100000]");
  }
  if (o.fan_out < 1 || o.fan_out > 1000) {
    return absl::InvalidArgumentError("fan_out: must be in [1, 1000]");
  }
  if (o.max_requests < 0 || o.duration_ns < 0 || (o.max_requests == 0 && o.duration_ns == 0)) {
    return absl::InvalidArgumentError("give a request count or a duration");
  }
  const int64_t cap = o.max_requests > 0 ? std::min(o.max_requests, kMaxScheduled) : kMaxScheduled;
  const double source_rate =
      o.rate_per_s / static_cast<double>(o.fan_out) / static_cast<double>(o.streams);

  std::vector<ArrivalGaps> sources;
  sources.reserve(static_cast<size_t>(o.streams));
  // (next event offset, source), earliest first.
  using Next = std::pair<int64_t, int64_t>;
  std::priority_queue<Next, std::vector<Next>, std::greater<Next>> next;
  for (int64_t s = 0; s < o.streams; ++s) {
    sources.emplace_back(source_rate, o.burstiness, o.seed + static_cast<uint64_t>(s));
    next.emplace(sources.back().NextNs(), s);
  }
  std::vector<int64_t> out;
  while (static_cast<int64_t>(out.size()) < cap) {
    const auto [at, s] = next.top();
    if (at >= kNever || (o.duration_ns > 0 && at >= o.duration_ns)) break;
    next.pop();
    for (int64_t k = 0; k < o.fan_out && static_cast<int64_t>(out.size()) < cap; ++k) {
      out.push_back(at);
    }
    const int64_t gap = sources[static_cast<size_t>(s)].NextNs();
    next.emplace(gap >= kNever - at ? kNever : at + gap, s);
  }
  return out;
}

}  // namespace swiftlet::loadgen
