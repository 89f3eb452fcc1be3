// AVX2 search for the next logit above a bar (compiled with -mavx2; called
// only when CPUID reports it): 16 ids a step in two compares; an ordered
// compare, so a NaN is never above.
#include "kernels/intrinsics.h"

#include <bit>

#include "kernels/next_above.h"

namespace swiftlet {
namespace {

int64_t NextAbove(const float* x, int64_t begin, int64_t n, float bar) {
  const __m256 bar_v = _mm256_set1_ps(bar);
  int64_t i = begin;
  for (; i + 16 <= n; i += 16) {
    const auto lo = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), bar_v, _CMP_GT_OQ)));
    const auto hi =
        static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i + 8), bar_v, _CMP_GT_OQ)));
    const unsigned above = lo | hi << 8;
    if (above != 0) return i + std::countr_zero(above);
  }
  return NextAboveScalar(x, i, n, bar);
}

}  // namespace

NextAboveFn NextAboveAvx2() { return NextAbove; }

}  // namespace swiftlet
