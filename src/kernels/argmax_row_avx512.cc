// AVX-512 argmax of a row (compiled with -mavx512f; called only when CPUID
// reports it): argmax_row_variants.h's two passes, 16 lanes at a time, the
// tail under a mask.
#include "kernels/intrinsics.h"

#include <cmath>

#include "core/argmax.h"
#include "kernels/argmax_row_variants.h"

namespace swiftlet {
namespace {

int32_t ArgMax(const float* x, int64_t n) {
  const __m512 none = _mm512_set1_ps(-INFINITY);
  // Four accumulators: each max waits only on its own last.
  __m512 m0 = none, m1 = none, m2 = none, m3 = none;
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
    m2 = _mm512_max_ps(_mm512_loadu_ps(x + i + 32), m2);
    m3 = _mm512_max_ps(_mm512_loadu_ps(x + i + 48), m3);
  }
  for (; i + 16 <= n; i += 16) m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
  const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1);  // n - i < 16
  if (tail != 0) m0 = _mm512_max_ps(_mm512_mask_loadu_ps(none, tail, x + i), m0);
  // No NaN in the accumulators: any order of the last maxes is the same.
  const float best = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3)));
  if (!(best > -INFINITY)) return kNoArgMax;
  const __m512 b = _mm512_set1_ps(best);
  for (i = 0; i + 16 <= n; i += 16) {
    const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), b, _CMP_EQ_OQ);
    if (hit != 0) return static_cast<int32_t>(i + __builtin_ctz(hit));
  }
  const __mmask16 hit = _mm512_mask_cmp_ps_mask(tail, _mm512_mask_loadu_ps(none, tail, x + i), b, _CMP_EQ_OQ);
  return static_cast<int32_t>(i + __builtin_ctz(hit));  // There is one (above).
}

}  // namespace

ArgMaxRowFn ArgMaxRowAvx512() { return ArgMax; }

}  // namespace swiftlet
