// AVX-512 microbenchmark kernels (compiled with -mavx512f -mavx512bw
// -mavx512vl -mavx512vnni; the VNNI ones are called only when CPUID reports
// VNNI, the others when it reports F/BW/VL). See machine_limits_variants.h.
#include <immintrin.h>

#include <cstring>

#include "perf/machine_limits_variants.h"

namespace swiftlet::machine_limits {
namespace {

// VPDPBUSD chains carry their accumulator (latency ~4-5 cycles, up to 2 per
// cycle on ymm): 16 independent chains keep the pipes full; 32 registers
// leave plenty spare. (VnniChains below is written for exactly 16.)
constexpr int kVnniChains = 16;
constexpr int kInt8Chains = 8;
constexpr int kFmaChains = 24;

// Plain lane sums: GCC 12's _mm512_reduce_add_* trip -Wuninitialized.
template <typename Lane, typename V>
Lane LaneSum(const V& v) {
  Lane lanes[sizeof(V) / sizeof(Lane)];
  std::memcpy(lanes, &v, sizeof(V));
  Lane s = 0;
  for (Lane x : lanes) s += x;
  return s;
}

template <typename V>
double SumLanes(const V& v) {
  alignas(64) int32_t lanes[sizeof(V) / 4];
  std::memcpy(lanes, &v, sizeof(V));
  double s = 0;
  for (int32_t x : lanes) s += x;
  return s;
}

// One step of 8 VPDPBUSD chains, written out: around the intrinsic, GCC 12
// copies every accumulator on each iteration, and it keeps an array of
// accumulators in memory across an asm statement; named locals stay in
// registers. (Eight per asm: a read-write operand counts twice against
// GCC's limit of 30 operands.)
template <typename V>
inline void Vnni8(V& c0, V& c1, V& c2, V& c3, V& c4, V& c5, V& c6, V& c7, V a, V b0, V b1) {
  __asm__(
      "vpdpbusd %[b0], %[a], %[c0]\n\t"
      "vpdpbusd %[b1], %[a], %[c1]\n\t"
      "vpdpbusd %[b0], %[a], %[c2]\n\t"
      "vpdpbusd %[b1], %[a], %[c3]\n\t"
      "vpdpbusd %[b0], %[a], %[c4]\n\t"
      "vpdpbusd %[b1], %[a], %[c5]\n\t"
      "vpdpbusd %[b0], %[a], %[c6]\n\t"
      "vpdpbusd %[b1], %[a], %[c7]"
      : [c0] "+v"(c0), [c1] "+v"(c1), [c2] "+v"(c2), [c3] "+v"(c3), [c4] "+v"(c4), [c5] "+v"(c5),
        [c6] "+v"(c6), [c7] "+v"(c7)
      : [a] "v"(a), [b0] "v"(b0), [b1] "v"(b1));
}

// 16 chains of VPDPBUSD on V (__m512i or __m256i); returns the sum of every
// lane of every chain.
template <typename V, typename Add>
double VnniChains(int64_t iters, V a, V b0, V b1, Add add) {
  V c0 = {}, c1 = {}, c2 = {}, c3 = {}, c4 = {}, c5 = {}, c6 = {}, c7 = {};
  V c8 = {}, c9 = {}, c10 = {}, c11 = {}, c12 = {}, c13 = {}, c14 = {}, c15 = {};
  for (int64_t i = 0; i < iters; ++i) {
    Vnni8(c0, c1, c2, c3, c4, c5, c6, c7, a, b0, b1);
    Vnni8(c8, c9, c10, c11, c12, c13, c14, c15, a, b0, b1);
  }
  const V lo = add(add(add(c0, c1), add(c2, c3)), add(add(c4, c5), add(c6, c7)));
  const V hi = add(add(add(c8, c9), add(c10, c11)), add(add(c12, c13), add(c14, c15)));
  return SumLanes(add(lo, hi));
}

double Vnni512Run(int64_t iters, uint32_t seed) {
  return VnniChains(iters, _mm512_set1_epi32(static_cast<int>(seed | 0x01010101u) & 0x3f3f3f3f),
                    _mm512_set1_epi8(static_cast<char>(seed % 7 + 1)),
                    _mm512_set1_epi8(static_cast<char>(seed % 5 + 1)),
                    [](__m512i x, __m512i y) { return _mm512_add_epi32(x, y); });
}

double Vnni256Run(int64_t iters, uint32_t seed) {
  return VnniChains(iters, _mm256_set1_epi32(static_cast<int>(seed | 0x01010101u) & 0x3f3f3f3f),
                    _mm256_set1_epi8(static_cast<char>(seed % 7 + 1)),
                    _mm256_set1_epi8(static_cast<char>(seed % 5 + 1)),
                    [](__m256i x, __m256i y) { return _mm256_add_epi32(x, y); });
}

double Int8BwRun(int64_t iters, uint32_t seed) {
  __m512i a = _mm512_set1_epi32(static_cast<int>(seed | 0x01010101u) & 0x3f3f3f3f);
  __m512i b[kInt8Chains];
  __m512i acc[kInt8Chains];
  for (int j = 0; j < kInt8Chains; ++j) {
    b[j] = _mm512_set1_epi8(static_cast<char>((seed >> j) % 7 + 1));
    acc[j] = _mm512_setzero_si512();
  }
  const __m512i ones = _mm512_set1_epi16(1);
  for (int64_t i = 0; i < iters; ++i) {
    // Opaque each iteration: the products are neither hoisted nor shared.
    __asm__ volatile("" : "+v"(a));
#pragma GCC unroll 8
    for (int j = 0; j < kInt8Chains; ++j) {
      acc[j] = _mm512_add_epi32(acc[j], _mm512_madd_epi16(_mm512_maddubs_epi16(a, b[j]), ones));
    }
  }
  __m512i total = acc[0];
  for (int j = 1; j < kInt8Chains; ++j) total = _mm512_add_epi32(total, acc[j]);
  return SumLanes(total);
}

double Fma512Run(int64_t iters, uint32_t seed) {
  // acc = acc * x + y stays near 1: no overflow, no denormals.
  const __m512 x = _mm512_set1_ps(0.999f);
  const __m512 y = _mm512_set1_ps(0.001f);
  __m512 acc[kFmaChains];
  for (int j = 0; j < kFmaChains; ++j)
    acc[j] = _mm512_set1_ps(1.0f + static_cast<float>((seed + j) % 5));
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 24
    for (int j = 0; j < kFmaChains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], x, y);
  }
  __m512 total = acc[0];
  for (int j = 1; j < kFmaChains; ++j) total = _mm512_add_ps(total, acc[j]);
  return LaneSum<float>(total);
}

}  // namespace

PeakKernel Int8PeakVnni512() { return {"avx512vnni/zmm", kVnniChains * 64 * 2.0, Vnni512Run}; }
PeakKernel Int8PeakVnni256() { return {"avx512vnni/ymm", kVnniChains * 32 * 2.0, Vnni256Run}; }
PeakKernel Int8PeakAvx512Bw() { return {"avx512bw", kInt8Chains * 64 * 2.0, Int8BwRun}; }
PeakKernel Fp32PeakAvx512() { return {"avx512", kFmaChains * 16 * 2.0, Fma512Run}; }

uint64_t ReadSumAvx512(const uint8_t* data, size_t n) {
  __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  for (size_t off = 0; off < n; off += 256) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_add_epi64(acc[j], _mm512_load_si512(data + off + 64 * j));
    }
  }
  return LaneSum<uint64_t>(
      _mm512_add_epi64(_mm512_add_epi64(acc[0], acc[1]), _mm512_add_epi64(acc[2], acc[3])));
}

uint64_t ReadSum4StreamsAvx512(const uint8_t* data, size_t n) {
  const size_t quarter = n / 4;
  __m512i acc[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                    _mm512_setzero_si512()};
  for (size_t off = 0; off < quarter; off += 64) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      acc[j] = _mm512_add_epi64(acc[j], _mm512_load_si512(data + j * quarter + off));
    }
  }
  return LaneSum<uint64_t>(
      _mm512_add_epi64(_mm512_add_epi64(acc[0], acc[1]), _mm512_add_epi64(acc[2], acc[3])));
}

}  // namespace swiftlet::machine_limits
