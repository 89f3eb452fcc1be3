// Open-loop arrival times: the gaps between requests of a Poisson process,
// or of a gamma renewal process with a burstiness factor. Seeded, so a run
// is repeatable. Shared by the engine driver and the load generator.
#pragma once

#include <cstdint>
#include <random>

#include "absl/status/status.h"

namespace swiftlet::loadgen {

class ArrivalGaps {
 public:
  // rate_per_s: mean arrivals per second, > 0 (+infinity: every gap 0).
  // burstiness: squared coefficient of variation of the gaps, finite and
  // > 0. 1 gives exponential gaps (Poisson); otherwise gamma gaps with shape
  // 1 / burstiness and the same mean, so > 1 is burstier and < 1 more
  // regular. (vLLM's --burstiness is the reciprocal: its shape.)
  // Arguments must pass Validate (checked).
  ArrivalGaps(double rate_per_s, double burstiness, uint64_t seed);

  static absl::Status Validate(double rate_per_s, double burstiness);

  // The next gap in nanoseconds: drawn in seconds from a std::mt19937_64
  // through std::exponential_distribution<double>(rate) or
  // std::gamma_distribution<double>(1 / burstiness, burstiness / rate) (one
  // distribution object for all draws: gamma keeps state between them),
  // rounded to the nearest nanosecond, capped at 1e18 ns.
  int64_t NextNs();

 private:
  bool infinite_;
  bool exponential_gaps_;
  std::mt19937_64 rng_;
  std::exponential_distribution<double> exponential_;
  std::gamma_distribution<double> gamma_;
};

}  // namespace swiftlet::loadgen
