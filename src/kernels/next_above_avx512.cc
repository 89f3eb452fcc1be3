// AVX-512 search for the next logit above a bar (compiled with -mavx512f;
// called only when CPUID reports it): 16 ids a compare; an ordered compare,
// so a NaN is never above.
#include "kernels/intrinsics.h"

#include <bit>

#include "kernels/next_above.h"

namespace swiftlet {
namespace {

int64_t NextAbove(const float* x, int64_t begin, int64_t n, float bar) {
  const __m512 bar_v = _mm512_set1_ps(bar);
  int64_t i = begin;
  for (; i + 16 <= n; i += 16) {
    const __mmask16 above = _mm512_cmp_ps_mask(_mm512_loadu_ps(x + i), bar_v, _CMP_GT_OQ);
    if (above != 0) return i + std::countr_zero(static_cast<unsigned>(above));
  }
  return NextAboveScalar(x, i, n, bar);
}

}  // namespace

NextAboveFn NextAboveAvx512() { return NextAbove; }

}  // namespace swiftlet
