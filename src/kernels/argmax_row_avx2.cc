// AVX2 argmax of a row (compiled with -mavx2; called only when CPUID
// reports it): argmax_row_variants.h's two passes, 8 lanes at a time; the
// last n % 8 values are compared one by one.
#include "kernels/intrinsics.h"

#include <cmath>

#include "core/argmax.h"
#include "kernels/argmax_row_variants.h"

namespace swiftlet {
namespace {

int32_t ArgMax(const float* x, int64_t n) {
  const __m256 none = _mm256_set1_ps(-INFINITY);
  // Four accumulators: each max waits only on its own last.
  __m256 m0 = none, m1 = none, m2 = none, m3 = none;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2);
    m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
  const int64_t whole = i;
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
  float best = -INFINITY;
  for (float v : lanes) best = v > best ? v : best;
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;  // A NaN is never greater.
  if (!(best > -INFINITY)) return kNoArgMax;
  const __m256 b = _mm256_set1_ps(best);
  for (i = 0; i < whole; i += 8) {
    const int hit = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), b, _CMP_EQ_OQ));
    if (hit != 0) return static_cast<int32_t>(i + __builtin_ctz(static_cast<unsigned>(hit)));
  }
  for (; i < n; ++i) {
    if (x[i] == best) return static_cast<int32_t>(i);
  }
  return kNoArgMax;  // Not reached: best is one of the values.
}

}  // namespace

ArgMaxRowFn ArgMaxRowAvx2() { return ArgMax; }

}  // namespace swiftlet
