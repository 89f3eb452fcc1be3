#include "model/logit_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/argmax_row.h"
#include "kernels/attention_ops.h"
#include "kernels/cpu_features.h"
#include "kernels/logit_weights.h"

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

double SumOfWeights(const float* x, int64_t n) {
  const int64_t whole = n - n % 4;
  double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
  for (int64_t i = 0; i < whole; i += 4) {
    t0 += x[i];
    t1 += x[i + 1];
    t2 += x[i + 2];
    t3 += x[i + 3];
  }
  for (int64_t i = whole; i < n; ++i) t0 += x[i];
  return (t0 + t1) + (t2 + t3);
}

int32_t ArgMaxOfLogits(const float* x, int64_t n) {
  static const ArgMaxRowFn argmax = ArgMaxRowFor(ChosenKernelIsa());
  return argmax(x, n);
}

}  // namespace swiftlet
