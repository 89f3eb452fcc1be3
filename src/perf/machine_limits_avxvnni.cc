// AVX-VNNI microbenchmark kernel (compiled with -mavx2 -mavxvnni; called
// only when CPUID reports AVX-VNNI). See machine_limits_variants.h.
#include <immintrin.h>

#include <cstring>

#include "perf/machine_limits_variants.h"

namespace swiftlet::machine_limits {
namespace {

// Six VEX-encoded VPDPBUSD chains per asm statement ("%{vex%}": braces
// alone select asm dialects), two statements: 12
// accumulators + the activation + 2 weights fit the 16 ymm registers.
// Written out for the reason machine_limits_avx512.cc gives (GCC copies
// accumulators around the intrinsic).
constexpr int kChains = 12;

inline void Vnni6(__m256i& c0, __m256i& c1, __m256i& c2, __m256i& c3, __m256i& c4, __m256i& c5,
                  __m256i a, __m256i b0, __m256i b1) {
  __asm__(
      "%{vex%} vpdpbusd %[b0], %[a], %[c0]\n\t"
      "%{vex%} vpdpbusd %[b1], %[a], %[c1]\n\t"
      "%{vex%} vpdpbusd %[b0], %[a], %[c2]\n\t"
      "%{vex%} vpdpbusd %[b1], %[a], %[c3]\n\t"
      "%{vex%} vpdpbusd %[b0], %[a], %[c4]\n\t"
      "%{vex%} vpdpbusd %[b1], %[a], %[c5]"
      : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [c4] "+x"(c4), [c5] "+x"(c5)
      : [a] "x"(a), [b0] "x"(b0), [b1] "x"(b1));
}

double VnniRun(int64_t iters, uint32_t seed) {
  const __m256i a = _mm256_set1_epi32(static_cast<int>(seed | 0x01010101u) & 0x3f3f3f3f);
  const __m256i b0 = _mm256_set1_epi8(static_cast<char>(seed % 7 + 1));
  const __m256i b1 = _mm256_set1_epi8(static_cast<char>(seed % 5 + 1));
  __m256i c0 = {}, c1 = {}, c2 = {}, c3 = {}, c4 = {}, c5 = {};
  __m256i c6 = {}, c7 = {}, c8 = {}, c9 = {}, c10 = {}, c11 = {};
  for (int64_t i = 0; i < iters; ++i) {
    Vnni6(c0, c1, c2, c3, c4, c5, a, b0, b1);
    Vnni6(c6, c7, c8, c9, c10, c11, a, b0, b1);
  }
  const __m256i lo = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c0, c1), _mm256_add_epi32(c2, c3)),
                                      _mm256_add_epi32(c4, c5));
  const __m256i hi = _mm256_add_epi32(_mm256_add_epi32(_mm256_add_epi32(c6, c7), _mm256_add_epi32(c8, c9)),
                                      _mm256_add_epi32(c10, c11));
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi32(lo, hi));
  double s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

}  // namespace

PeakKernel Int8PeakAvxVnni() { return {"avxvnni", kChains * 32 * 2.0, VnniRun}; }

}  // namespace swiftlet::machine_limits
