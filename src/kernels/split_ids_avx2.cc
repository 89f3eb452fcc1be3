// AVX2 split of a row's ids (compiled with -mavx2; called only when CPUID
// reports it): 8 ids a step. AVX2 has no compress, so each side's 8-bit
// mask picks a permutation from a table that moves its kept lanes to the
// front, then the vector is stored whole.
#include "kernels/intrinsics.h"

#include <array>
#include <bit>

#include "kernels/split_ids.h"

namespace swiftlet {
namespace {

// For each 8-bit mask, the lanes it sets, in order, then zeros.
constexpr std::array<std::array<int32_t, 8>, 256> MakeFrontLanes() {
  std::array<std::array<int32_t, 8>, 256> table{};
  for (int mask = 0; mask < 256; ++mask) {
    int k = 0;
    for (int lane = 0; lane < 8; ++lane) {
      if (mask & (1 << lane)) table[mask][k++] = lane;
    }
  }
  return table;
}
alignas(32) constexpr std::array<std::array<int32_t, 8>, 256> kFrontLanes = MakeFrontLanes();

// bits >= t as unsigned: AVX2 compares signed, so both sides flip their
// sign bit first; >= is not (t > bits).
inline unsigned AtLeast(__m256i flipped_bits, __m256i flipped_t) {
  const __m256i below = _mm256_cmpgt_epi32(flipped_t, flipped_bits);
  return ~static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(below))) & 0xffu;
}

inline int64_t StoreFront(int32_t* dst, __m256i ids, unsigned mask) {
  const __m256i order = _mm256_load_si256(reinterpret_cast<const __m256i*>(kFrontLanes[mask].data()));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), _mm256_permutevar8x32_epi32(ids, order));
  return std::popcount(mask);
}

int64_t SplitIds(const float* p, int64_t n, uint32_t lo, uint32_t hi, int32_t* above, int32_t* at, int64_t* n_at) {
  const __m256i sign = _mm256_set1_epi32(INT32_MIN);
  const __m256i lo_v = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int32_t>(lo)), sign);
  const __m256i hi_v = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int32_t>(hi)), sign);
  const __m256i step = _mm256_set1_epi32(8);
  __m256i ids = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  int64_t n_above = 0, n_in = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), sign);
    const unsigned up = AtLeast(bits, hi_v);
    const unsigned in = AtLeast(bits, lo_v) & ~up;
    n_above += StoreFront(above + n_above, ids, up);
    n_in += StoreFront(at + n_in, ids, in);
    ids = _mm256_add_epi32(ids, step);
  }
  split_ids_internal::SplitFrom(p, i, n, lo, hi, above, at, n_above, n_in);
  *n_at = n_in;
  return n_above;
}

}  // namespace

SplitIdsFn SplitIdsAvx2() { return SplitIds; }

}  // namespace swiftlet
