// AVX-512 SiLU gate (compiled with -mavx512f, and -mavx2 -mf16c for
// lanes16_zmm.inc; called only when CPUID reports them): silu.cc's
// operations, in the same order, 16 lanes at a time, so every result is
// bit-identical to the scalar specification.
#include "kernels/intrinsics.h"

#include "kernels/kernel_exp.h"
#include "kernels/silu_variants.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_zmm.inc"
#include "kernels/kernel_exp_zmm.inc"

void SiluMul(float* gate, const float* up, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  auto negate = [sign](__m512 v) { return _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(v), sign)); };
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 g = _mm512_loadu_ps(gate + i);
    const __m512 e = ExpF(negate(g));
    _mm512_storeu_ps(gate + i, _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_loadu_ps(up + i)));
  }
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = ExpF(negate(g));
    _mm512_mask_storeu_ps(gate + i, m,
                          _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(one, e)), _mm512_maskz_loadu_ps(m, up + i)));
  }
}

}  // namespace

SiluMulFn SiluMulAvx512() { return SiluMul; }

}  // namespace swiftlet
