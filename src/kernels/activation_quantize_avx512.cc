// AVX-512 activation quantizers (compiled with -mavx512f -mavx512bw; called
// only when CPUID reports them). Bit-identical to quantize.cc's scalar
// QuantizeRowQ8_0 and QuantizeRowQ8_K; activation_quantize.h says why.
#include "kernels/intrinsics.h"

#include "core/check.h"
#include "kernels/activation_quantize_variants.h"
#include "kernels/float16.h"

namespace swiftlet {
namespace {

inline __m512 Abs(__m512 v) { return _mm512_abs_ps(v); }

// max(m, v) lane-wise, keeping m where v is NaN: std::max(amax, |x|) of
// the scalar code skips a NaN (VMAXPS returns its second operand when
// either is NaN). m starts at 0, so it never holds one.
inline __m512 MaxIgnoringNan(__m512 v, __m512 m) { return _mm512_max_ps(v, m); }

// round(x * scale) clamped to [-127, 127], as int32 lanes.
inline __m512i Quantize16(const float* x, __m512 scale) {
  const __m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(x), scale),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i q = _mm512_cvtps_epi32(r);
  return _mm512_min_epi32(_mm512_max_epi32(q, _mm512_set1_epi32(-127)), _mm512_set1_epi32(127));
}

inline void Store16(int8_t* out, __m512i q) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q));
}

void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n) {
  SWIFTLET_CHECK(n % BlockQ8_0::kElems == 0);
  static_assert(BlockQ8_0::kElems == 32);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    const float amax = _mm512_reduce_max_ps(
        MaxIgnoringNan(Abs(_mm512_loadu_ps(x + 16)), MaxIgnoringNan(Abs(_mm512_loadu_ps(x)), _mm512_setzero_ps())));
    // The scalar code's scale, to the bit.
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[i].d = Fp32ToFp16(d);
    const __m512 s = _mm512_set1_ps(id);
    Store16(y[i].qs, Quantize16(x, s));
    Store16(y[i].qs + 16, Quantize16(x + 16, s));
  }
}

void QuantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n) {
  constexpr int kElems = BlockQ8_K::kElems;
  static_assert(kElems == 256);
  SWIFTLET_CHECK(n % kElems == 0);
  for (int64_t i = 0; i < n / kElems; ++i, x += kElems) {
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < kElems; j += 16) m = MaxIgnoringNan(Abs(_mm512_loadu_ps(x + j)), m);
    const float amax = _mm512_reduce_max_ps(m);
    const float iscale = amax != 0 ? 127.0f / amax : 0.0f;
    y[i].d = amax != 0 ? 1.0f / iscale : 0.0f;
    const __m512 s = _mm512_set1_ps(iscale);
    for (int g = 0; g < kElems / 16; ++g) {
      const __m512i q = Quantize16(x + 16 * g, s);
      Store16(y[i].qs + 16 * g, q);
      y[i].bsums[g] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
  }
}

}  // namespace

const ActivationQuantizers& ActivationQuantizersAvx512() {
  static const ActivationQuantizers q{QuantizeQ8_0, QuantizeQ8_K};
  return q;
}

}  // namespace swiftlet
