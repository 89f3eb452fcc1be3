// A fixed-bucket latency histogram for /metrics: lock-free Record from any
// thread, a consistent-enough Read for a scrape (each counter is atomic; a
// scrape racing a Record may see the count one ahead of a bucket, which
// Prometheus tolerates).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace swiftlet::gateway {

class LatencyHistogram {
 public:
  // Upper bounds in milliseconds; a last bucket (+Inf) follows.
  static constexpr std::array<double, 14> kBoundsMs = {0.1, 0.25, 0.5, 1,   2.5, 5,    10,
                                                       25,  50,   100, 250, 500, 1000, 2500};
  static constexpr size_t kBuckets = kBoundsMs.size() + 1;

  void Record(int64_t ns);

  struct Snapshot {
    std::array<uint64_t, kBuckets> counts{};  // Per bucket, not cumulative.
    uint64_t count = 0;
    double sum_seconds = 0;
  };
  Snapshot Read() const;

 private:
  std::array<std::atomic<uint64_t>, kBuckets> counts_{};
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace swiftlet::gateway
