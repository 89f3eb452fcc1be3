#include "gateway/latency_histogram.h"

#include <algorithm>

namespace swiftlet::gateway {

void LatencyHistogram::Record(int64_t ns) {
  ns = std::max<int64_t>(ns, 0);
  const double ms = static_cast<double>(ns) / 1e6;
  size_t bucket = 0;
  while (bucket < kBoundsMs.size() && ms > kBoundsMs[bucket]) ++bucket;
  counts_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(ns), std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::Read() const {
  Snapshot s;
  for (size_t i = 0; i < kBuckets; ++i) {
    s.counts[i] = counts_[i].load(std::memory_order_relaxed);
    s.count += s.counts[i];
  }
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace swiftlet::gateway
