// AVX-512 SiLU gate (compiled with -mavx512f; called only when CPUID
// reports it): silu.cc's operations, in the same order, 16 lanes at a time,
// so every result is bit-identical to the scalar specification.
#include "kernels/intrinsics.h"

#include "kernels/silu_variants.h"

namespace swiftlet {
namespace {

inline __m512 Exp16(__m512 v) {
  using namespace silu_internal;
  const __m512 x = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(kMinX)), _mm512_set1_ps(kMaxX));
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(k, _mm512_set1_ps(kLn2Hi)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(k, _mm512_set1_ps(kLn2Lo)));
  __m512 p = _mm512_set1_ps(kInvFact[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kInvFact[i]));
  const __m512 one = _mm512_set1_ps(1.0f);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), one);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), one);
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(k), _mm512_set1_epi32(127)), 23);
  const __m512 e = _mm512_mul_ps(p, _mm512_castsi512_ps(bits));
  // NaN lanes stay NaN, as in the scalar code.
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), e, v);
}

void SiluMul(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  auto negate = [sign](__m512 v) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign)); };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = Exp16(negate(g));
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = Exp16(negate(g));
    _mm512_mask_storeu_ps(gate + i, m,
                          _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace

SiluMulFn SiluMulAvx512() { return SiluMul; }

}  // namespace swiftlet
