#include "model/logit_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/argmax_row.h"
#include "kernels/attention_ops.h"
#include "kernels/cpu_features.h"
#include "kernels/logit_weights.h"
#include "kernels/next_above.h"
#include "kernels/split_ids.h"

namespace swiftlet {

float ExpOfLogitsInPlace(float* x, int64_t n, float temperature) {
  const float scale = 1.0f / temperature;
  if (std::isfinite(scale)) {
    static const LogitWeightsFn weights = LogitWeightsFor(ChosenKernelIsa());
    return weights(x, n, scale);
  }
  // A temperature below 2^-128, whose inverse overflows: the exponents are
  // divided by it instead (scalar: no sampler asks for this on purpose).
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = std::max(max, x[i]);
  if (!std::isfinite(max)) return max;
  for (int64_t i = 0; i < n; ++i) x[i] = std::isnan(x[i]) ? 0.0f : SoftmaxWeight((x[i] - max) / temperature);
  return max;
}

namespace {

// The last id in [begin, end) of weight above 0; -1 when none.
int64_t LastWeighted(const float* x, int64_t begin, int64_t end) {
  for (int64_t i = end; i-- > begin;) {
    if (x[i] > 0.0f) return i;
  }
  return -1;
}

WeightBlockSumsFn ChosenWeightBlockSums() {
  static const WeightBlockSumsFn sums = WeightBlockSumsFor(ChosenKernelIsa());
  return sums;
}

}  // namespace

int64_t WeightBlocks(int64_t n) { return (n + kWeightBlock - 1) / kWeightBlock; }

double WeightBlockSums(const float* x, int64_t n, double* sums) { return ChosenWeightBlockSums()(x, n, sums); }

double SumOfWeights(const float* x, int64_t n) { return ChosenWeightBlockSums()(x, n, nullptr); }

int64_t DrawFromWeights(const float* x, int64_t n, const double* sums, double target) {
  double below = 0.0;  // The blocks before b.
  for (int64_t b = 0, begin = 0; begin < n; ++b, begin += kWeightBlock) {
    const double through = below + sums[b];
    if (through > target) {
      // A block that passes has a weight above 0 (a sum of 0 adds
      // nothing), and so does the id whose add passes target.
      const int64_t end = std::min(begin + kWeightBlock, n);
      double running = below;
      for (int64_t i = begin; i < end; ++i) {
        running += static_cast<double>(x[i]);
        if (running > target) return i;
      }
      return LastWeighted(x, begin, end);  // The block's own order passed, this one not.
    }
    below = through;
  }
  const int64_t last = LastWeighted(x, 0, n);
  return last >= 0 ? last : n - 1;
}

int64_t SplitIdsByBits(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at,
                       int64_t* n_at) {
  static const SplitIdsFn split = SplitIdsFor(ChosenKernelIsa());
  return split(p, n, lo, hi, above, at, n_at);
}

int64_t SplitIdsRoom(int64_t n) { return n + kSplitIdsSlack; }

int64_t NextAbove(const float* x, int64_t begin, int64_t n, float bar) {
  static const NextAboveFn next = NextAboveFor(ChosenKernelIsa());
  return next(x, begin, n, bar);
}

int32_t ArgMaxOfLogits(const float* x, int64_t n) {
  static const ArgMaxRowFn argmax = ArgMaxRowFor(ChosenKernelIsa());
  return argmax(x, n);
}

}  // namespace swiftlet
