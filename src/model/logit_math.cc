#include "model/logit_math.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/argmax_row.h"
#include "kernels/attention_ops.h"
#include "kernels/cpu_features.h"

namespace swiftlet {

float ExpOfLogitsInPlace(float* x, int64_t n, float temperature) {
  // The max in four independent chains (one would wait on each compare).
  const int64_t whole = n - n % 4;
  float m0 = -std::numeric_limits<float>::infinity(), m1 = m0, m2 = m0, m3 = m0;
  for (int64_t i = 0; i < whole; i += 4) {
    m0 = std::max(m0, x[i]);
    m1 = std::max(m1, x[i + 1]);
    m2 = std::max(m2, x[i + 2]);
    m3 = std::max(m3, x[i + 3]);
  }
  for (int64_t i = whole; i < n; ++i) m0 = std::max(m0, x[i]);
  const float max = std::max(std::max(m0, m1), std::max(m2, m3));
  // NaN is never drawn (as ArgMaxRow never picks it): weight 0. A scale
  // that overflows (temperature below 2^-128) divides instead.
  const float scale = 1.0f / temperature;
  const float nan_exponent = -std::numeric_limits<float>::infinity();
  if (std::isfinite(scale)) {
    for (int64_t i = 0; i < n; ++i) x[i] = std::isnan(x[i]) ? nan_exponent : (x[i] - max) * scale;
  } else {
    for (int64_t i = 0; i < n; ++i) x[i] = std::isnan(x[i]) ? nan_exponent : (x[i] - max) / temperature;
  }
  // Attention's softmax weights are this exp below a maximum of 0, in 16
  // lanes (any head dimension that is a multiple of 16 picks the SIMD ops).
  (void)AttentionOpsFor(ChosenKernelIsa(), 16).softmax_weights(x, n, 0.0f);
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
