// AVX-512 attention ops (compiled with -mavx512f -mf16c; called only when
// CPUID reports them, for head dimensions that are a multiple of 16). The
// summation order is attention_ops.h's: 16 lanes, then the fixed fold.
#include "kernels/intrinsics.h"

#include <algorithm>

#include "kernels/attention_ops_variants.h"

namespace swiftlet {
namespace {

inline __m512 Widen(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 Widen(const float* p) { return _mm512_loadu_ps(p); }

// The fixed fold of attention_ops.h: lane l += l+8, then +4, +2, +1.
inline float Fold(__m512 acc) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc), 1)));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_shuffle_ps(s2, s2, 1)));
}

template <typename K>
float Dot(const float* q, const K* k, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(q + i), Widen(k + i)));
  return Fold(acc);
}

template <typename V>
void Axpy(float* acc, float p, const V* v, int64_t n) {
  const __m512 pv = _mm512_set1_ps(p);
  for (int64_t i = 0; i < n; i += 16) {
    _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_mul_ps(pv, Widen(v + i))));
  }
}

// 16 elements of a Q8_0 row starting at i (i a multiple of 16).
inline __m512 WidenQ8(const BlockQ8_0* row, int64_t i) {
  const BlockQ8_0& b = row[i / BlockQ8_0::kElems];
  const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b.qs + i % BlockQ8_0::kElems));
  const __m512 d = _mm512_set1_ps(_cvtsh_ss(b.d));
  return _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)));
}

float DotQ8(const float* q, const BlockQ8_0* k, int64_t n) {
  __m512 acc = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_loadu_ps(q + i), WidenQ8(k, i)));
  return Fold(acc);
}

void AxpyQ8(float* acc, float p, const BlockQ8_0* v, int64_t n) {
  const __m512 pv = _mm512_set1_ps(p);
  for (int64_t i = 0; i < n; i += 16) {
    _mm512_storeu_ps(acc + i, _mm512_add_ps(_mm512_loadu_ps(acc + i), _mm512_mul_ps(pv, WidenQ8(v, i))));
  }
}

// 16 widened elements of a key or value row at i, whatever its type.
inline __m512 WidenAt(const float* row, int64_t i) { return Widen(row + i); }
inline __m512 WidenAt(const uint16_t* row, int64_t i) { return Widen(row + i); }
inline __m512 WidenAt(const BlockQ8_0* row, int64_t i) { return WidenQ8(row, i); }

// Up to this many heads share one widened slice of the row (their
// accumulators stay in registers); larger groups go in chunks.
constexpr int64_t kHeadsPerPass = 8;

// Each head's accumulator sees the same multiply-then-add sequence over i
// as Dot's, so each result is Dot's.
template <typename K>
void DotGroup(const float* q, int64_t group, const K* k, int64_t n, float* out) {
  for (int64_t h0 = 0; h0 < group; h0 += kHeadsPerPass) {
    const int64_t heads = std::min(kHeadsPerPass, group - h0);
    const float* qh = q + h0 * n;
    __m512 acc[kHeadsPerPass];
#pragma GCC unroll 8
    for (int64_t h = 0; h < kHeadsPerPass; ++h) acc[h] = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
      const __m512 kv = WidenAt(k, i);
#pragma GCC unroll 8
      for (int64_t h = 0; h < kHeadsPerPass; ++h) {
        if (h < heads) acc[h] = _mm512_add_ps(acc[h], _mm512_mul_ps(_mm512_loadu_ps(qh + h * n + i), kv));
      }
    }
    for (int64_t h = 0; h < heads; ++h) out[h0 + h] = Fold(acc[h]);
  }
}

// Element by element Axpy's acc + p * v for every head.
template <typename V>
void AxpyGroup(float* acc, int64_t group, const float* p, const V* v, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 vv = WidenAt(v, i);
    for (int64_t h = 0; h < group; ++h) {
      float* a = acc + h * n + i;
      _mm512_storeu_ps(a, _mm512_add_ps(_mm512_loadu_ps(a), _mm512_mul_ps(_mm512_set1_ps(p[h]), vv)));
    }
  }
}

}  // namespace

const AttentionOps& AttentionOpsAvx512() {
  static const AttentionOps ops{Dot<float>,          Dot<uint16_t>,          Axpy<float>,
                                Axpy<uint16_t>,      DotQ8,                  AxpyQ8,
                                DotGroup<float>,     DotGroup<uint16_t>,     DotGroup<BlockQ8_0>,
                                AxpyGroup<float>,    AxpyGroup<uint16_t>,    AxpyGroup<BlockQ8_0>};
  return ops;
}

}  // namespace swiftlet
