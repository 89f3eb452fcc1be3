// AVX-512 split of a row's ids (compiled with -mavx512f; called only when
// CPUID reports it): 16 ids a step, each side's kept ids compressed to the
// front of a vector (vpcompressd on registers: its memory form is slow on
// some CPUs) and stored whole; the next store starts where they end.
#include "kernels/intrinsics.h"

#include <bit>

#include "kernels/split_ids.h"

namespace swiftlet {
namespace {

int64_t SplitIds(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at, int64_t* n_at) {
  const __m512i lo_v = _mm512_set1_epi32(static_cast<int32_t>(lo));
  const __m512i hi_v = _mm512_set1_epi32(static_cast<int32_t>(hi));
  const __m512i step = _mm512_set1_epi32(16);
  __m512i ids = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  int64_t n_above = 0, n_in = 0, i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i bits = _mm512_loadu_si512(p + i);
    const __mmask16 up = _mm512_cmpge_epu32_mask(bits, hi_v);
    const __mmask16 in = static_cast<__mmask16>(_mm512_cmpge_epu32_mask(bits, lo_v) & ~up);
    _mm512_storeu_si512(above + n_above, _mm512_maskz_compress_epi32(up, ids));
    n_above += std::popcount(static_cast<unsigned>(up));
    _mm512_storeu_si512(at + n_in, _mm512_maskz_compress_epi32(in, ids));
    n_in += std::popcount(static_cast<unsigned>(in));
    ids = _mm512_add_epi32(ids, step);
  }
  split_ids_internal::SplitFrom(p, i, n, lo, hi, above, at, n_above, n_in);
  *n_at = n_in;
  return n_above;
}

}  // namespace

SplitIdsFn SplitIdsAvx512() { return SplitIds; }

}  // namespace swiftlet
