// AVX2 activation quantizers (compiled with -mavx2 -mf16c; called only when
// CPUID reports them). Bit-identical to quantize.cc's scalar
// QuantizeRowQ8_0 and QuantizeRowQ8_K, as the AVX-512 ones: the scales are
// the scalar code's float steps, the maxima and sums exact in any order.
#include "kernels/intrinsics.h"

#include "core/check.h"
#include "kernels/activation_quantize_variants.h"
#include "kernels/float16.h"

namespace swiftlet {
namespace {

inline __m256 Abs(__m256 v) { return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF))); }

// max(m, v) lane-wise, keeping m where v is NaN: std::max(amax, |x|) of
// the scalar code skips a NaN (VMAXPS returns its second operand when
// either is NaN). m starts at 0, so it never holds one.
inline __m256 MaxIgnoringNan(__m256 v, __m256 m) { return _mm256_max_ps(v, m); }

inline float MaxLanes(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

inline int SumLanes(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  return _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1)));
}

// round(x * scale) (to nearest even, as std::nearbyint) clamped to
// [-127, 127], as int32 lanes.
inline __m256i Quantize8(const float* x, __m256 scale) {
  const __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), scale), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256i q = _mm256_cvtps_epi32(r);
  return _mm256_min_epi32(_mm256_max_epi32(q, _mm256_set1_epi32(-127)), _mm256_set1_epi32(127));
}

// Four vectors of 8 int32 in [-127, 127] to 32 bytes in order: the packs
// work within 128-bit halves, the permutation restores the order.
inline void Store32(int8_t* out, __m256i q0, __m256i q1, __m256i q2, __m256i q3) {
  const __m256i bytes = _mm256_packs_epi16(_mm256_packs_epi32(q0, q1), _mm256_packs_epi32(q2, q3));
  const __m256i ordered = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
}

void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n) {
  SWIFTLET_CHECK(n % BlockQ8_0::kElems == 0);
  static_assert(BlockQ8_0::kElems == 32);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < 32; j += 8) m = MaxIgnoringNan(Abs(_mm256_loadu_ps(x + j)), m);
    const float amax = MaxLanes(m);
    // The scalar code's scale, to the bit.
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    const __m256 s = _mm256_set1_ps(id);
    Store32(y[i].qs, Quantize8(x, s), Quantize8(x + 8, s), Quantize8(x + 16, s), Quantize8(x + 24, s));
  }
}

void QuantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n) {
  constexpr int kElems = BlockQ8_K::kElems;
  static_assert(kElems == 256);
  SWIFTLET_CHECK(n % kElems == 0);
  for (int64_t i = 0; i < n / kElems; ++i, x += kElems) {
    __m256 m = _mm256_setzero_ps();
    for (int j = 0; j < kElems; j += 8) m = MaxIgnoringNan(Abs(_mm256_loadu_ps(x + j)), m);
    const float amax = MaxLanes(m);
    const float iscale = amax != 0 ? 127.0f / amax : 0.0f;
    y[i].d = amax != 0 ? 1.0f / iscale : 0.0f;
    const __m256 s = _mm256_set1_ps(iscale);
    for (int g = 0; g < kElems / 32; ++g) {
      const float* xg = x + 32 * g;
      const __m256i q0 = Quantize8(xg, s), q1 = Quantize8(xg + 8, s);
      const __m256i q2 = Quantize8(xg + 16, s), q3 = Quantize8(xg + 24, s);
      Store32(y[i].qs + 32 * g, q0, q1, q2, q3);
      y[i].bsums[2 * g] = static_cast<int16_t>(SumLanes(_mm256_add_epi32(q0, q1)));
      y[i].bsums[2 * g + 1] = static_cast<int16_t>(SumLanes(_mm256_add_epi32(q2, q3)));
    }
  }
}

}  // namespace

const ActivationQuantizers& ActivationQuantizersAvx2() {
  static const ActivationQuantizers q{QuantizeQ8_0, QuantizeQ8_K};
  return q;
}

}  // namespace swiftlet
