#include "loadgen/arrivals.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace swiftlet::loadgen {

absl::Status ArrivalGaps::Validate(double rate_per_s, double burstiness) {
  if (!(rate_per_s > 0)) return absl::InvalidArgumentError("rate: must be > 0");
  if (!(burstiness > 0) || !std::isfinite(burstiness)) {
    return absl::InvalidArgumentError("burstiness: must be finite and > 0");
  }
  return absl::OkStatus();
}

ArrivalGaps::ArrivalGaps(double rate_per_s, double burstiness, uint64_t seed)
    : infinite_(std::isinf(rate_per_s)),
      exponential_gaps_(burstiness == 1.0),
      rng_(seed),
      exponential_(infinite_ ? 1.0 : rate_per_s),
      gamma_(1.0 / burstiness, infinite_ ? 1.0 : burstiness / rate_per_s) {
  SWIFTLET_CHECK(Validate(rate_per_s, burstiness).ok());
}

int64_t ArrivalGaps::NextNs() {
  if (infinite_) return 0;
  const double s = exponential_gaps_ ? exponential_(rng_) : gamma_(rng_);
  return std::llround(std::min(s * 1e9, 1e18));  // 1e18 ns: 31 years, keeps sums in range.
}

}  // namespace swiftlet::loadgen
