#include "engine/step_cost.h"

#include <algorithm>

namespace swiftlet {
namespace {

constexpr double kWeight = 0.1;
// Steps with fewer output rows than this leave the per-row costs alone:
// the part of the work around a step that does not grow with its rows
// would weigh too much in them.
constexpr int64_t kMinRowsToLearn = 4;
// Steps with fewer tokens than this refine the fixed part, larger ones the
// per-token cost.
constexpr int64_t kMinTokensForPerToken = 16;

}  // namespace

void StepCostModel::Learn(double forward_ns, int64_t tokens, double around_ns, OutputRows outputs) {
  if (outputs.total() >= kMinRowsToLearn && around_ns > 0) {
    // Normalized least mean squares on (sampled, argmax) -> around_ns: the
    // residual is shared in proportion to each kind's count. A step of one
    // kind moves that kind's cost a tenth of the way to around / rows and
    // leaves the other alone; mixed steps of different mixes separate them.
    const auto s = static_cast<double>(outputs.sampled);
    const auto a = static_cast<double>(outputs.argmax);
    const double step = kWeight * (around_ns - AroundNs(outputs)) / (s * s + a * a);
    per_output_ns = std::max(0.0, per_output_ns + step * s);
    per_argmax_ns = std::max(0.0, per_argmax_ns + step * a);
  }
  if (tokens > 0 && forward_ns > 0) {
    if (tokens >= kMinTokensForPerToken) {
      const double per = std::max(0.0, (forward_ns - fixed_ns) / static_cast<double>(tokens));
      per_token_ns += kWeight * (per - per_token_ns);
    } else {
      const double fixed = std::max(0.0, forward_ns - per_token_ns * static_cast<double>(tokens));
      fixed_ns += kWeight * (fixed - fixed_ns);
    }
  }
}

}  // namespace swiftlet
