#include "kernels/logit_weights.h"

#include <algorithm>
#include <cmath>

#include "kernels/attention_ops.h"

namespace swiftlet {

float LogitWeightsScalar(float* x, int64_t n, float scale) {
  // The max in four independent chains (one would wait on each compare);
  // std::max keeps its first argument when the second is NaN.
  const int64_t whole = n - n % 4;
  float m0 = -INFINITY, m1 = m0, m2 = m0, m3 = m0;
  for (int64_t i = 0; i < whole; i += 4) {
    m0 = std::max(m0, x[i]);
    m1 = std::max(m1, x[i + 1]);
    m2 = std::max(m2, x[i + 2]);
    m3 = std::max(m3, x[i + 3]);
  }
  for (int64_t i = whole; i < n; ++i) m0 = std::max(m0, x[i]);
  // + 0: a -0 max is +0, whichever zero the chains met first.
  const float max = std::max(std::max(m0, m1), std::max(m2, m3)) + 0.0f;
  if (!std::isfinite(max)) return max;
  for (int64_t i = 0; i < n; ++i) x[i] = std::isnan(x[i]) ? 0.0f : SoftmaxWeight((x[i] - max) * scale);
  return max;
}

namespace {

double BlockSumScalar(const float* x) {
  double lanes[16] = {};
  for (int64_t v = 0; v < kWeightBlock; v += 16) {
    for (int l = 0; l < 16; ++l) lanes[l] += static_cast<double>(x[v + l]);
  }
  for (int width = 8; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] += lanes[l + width];
  }
  return lanes[0];
}

}  // namespace

double WeightBlockSumsScalar(const float* x, int64_t n, double* sums) {
  return logit_weights_internal::SumBlocks(x, n, sums, BlockSumScalar);
}

WeightBlockSumsFn WeightBlockSumsFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return WeightBlockSumsAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return WeightBlockSumsAvx2();
    case KernelIsa::kScalar: break;
  }
  return WeightBlockSumsScalar;
}

LogitWeightsFn LogitWeightsFor(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::kAvx512Vnni:
    case KernelIsa::kAvx512: return LogitWeightsAvx512();
    case KernelIsa::kAvxVnni:
    case KernelIsa::kAvx2: return LogitWeightsAvx2();
    case KernelIsa::kScalar: break;
  }
  return LogitWeightsScalar;
}

}  // namespace swiftlet
