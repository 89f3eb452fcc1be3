// AVX2 + FMA microbenchmark kernels (compiled with -mavx2 -mfma; called only
// when CPUID reports them). See machine_limits_variants.h.
#include <immintrin.h>

#include "perf/machine_limits_variants.h"

namespace swiftlet::machine_limits {
namespace {

// 6 chains: 6 accumulators + 6 weight vectors + the activation and the ones
// fit the 16 ymm registers with room for the temporaries, so nothing spills.
constexpr int kInt8Chains = 6;
// FMA latency 4 x 2 pipes needs >= 8 chains in flight; 12 leaves margin.
constexpr int kFmaChains = 12;

double HorizontalSum(__m256i v) {
  alignas(32) int32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), v);
  double s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

double Int8Run(int64_t iters, uint32_t seed) {
  __m256i a = _mm256_set1_epi32(static_cast<int>(seed | 0x01010101u) & 0x3f3f3f3f);
  __m256i b[kInt8Chains];
  __m256i acc[kInt8Chains];
  for (int j = 0; j < kInt8Chains; ++j) {
    b[j] = _mm256_set1_epi8(static_cast<char>((seed >> j) % 7 + 1));
    acc[j] = _mm256_setzero_si256();
  }
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iters; ++i) {
    // The activation is opaque to the compiler each iteration, so the
    // products are neither hoisted out of the loop nor shared across chains.
    __asm__ volatile("" : "+x"(a));
#pragma GCC unroll 8
    for (int j = 0; j < kInt8Chains; ++j) {
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(a, b[j]), ones));
    }
  }
  // Folded in registers first, so the accumulators never live in memory.
  __m256i total = acc[0];
  for (int j = 1; j < kInt8Chains; ++j) total = _mm256_add_epi32(total, acc[j]);
  return HorizontalSum(total);
}

double FmaRun(int64_t iters, uint32_t seed) {
  // acc = acc * x + y stays near y / (1 - x) = 1: no overflow, no denormals.
  const __m256 x = _mm256_set1_ps(0.999f);
  const __m256 y = _mm256_set1_ps(0.001f);
  __m256 acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j)
    acc[j] = _mm256_set1_ps(1.0f + static_cast<float>((seed + j) % 5));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], x, y);
  }
  __m256 total = acc[0];
  for (int j = 1; j < kFmaChains; ++j) total = _mm256_add_ps(total, acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, total);
  double s = 0;
  for (float v : lanes) s += v;
  return s;
}

}  // namespace

PeakKernel Int8PeakAvx2() { return {"avx2", kInt8Chains * 32 * 2.0, Int8Run}; }
PeakKernel Fp32PeakAvx2() { return {"avx2", kFmaChains * 8 * 2.0, FmaRun}; }

uint64_t ReadSumAvx2(const uint8_t* data, size_t n) {
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  for (size_t off = 0; off < n; off += 128) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(data + off + 32 * j));
      acc[j] = _mm256_add_epi64(acc[j], v);
    }
  }
  const __m256i s =
      _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

uint64_t ReadSum4StreamsAvx2(const uint8_t* data, size_t n) {
  const size_t quarter = n / 4;
  __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                    _mm256_setzero_si256()};
  for (size_t off = 0; off < quarter; off += 64) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const uint8_t* line = data + j * quarter + off;
      acc[j] = _mm256_add_epi64(acc[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(line)));
      acc[j] = _mm256_add_epi64(acc[j], _mm256_load_si256(reinterpret_cast<const __m256i*>(line + 32)));
    }
  }
  const __m256i s =
      _mm256_add_epi64(_mm256_add_epi64(acc[0], acc[1]), _mm256_add_epi64(acc[2], acc[3]));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // namespace swiftlet::machine_limits
