// AVX2 SiLU gate (compiled with -mavx2; called only when CPUID reports it):
// silu.cc's operations, in the same order, 8 lanes at a time, so every
// result is bit-identical to the scalar specification; the last n % 8
// elements take the scalar code itself.
#include "kernels/intrinsics.h"

#include "kernels/silu_variants.h"

namespace swiftlet {
namespace {

inline __m256 Exp8(__m256 v) {
  using namespace silu_internal;
  const __m256 x = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(kMinX)), _mm256_set1_ps(kMaxX));
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(k, _mm256_set1_ps(kLn2Hi)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(k, _mm256_set1_ps(kLn2Lo)));
  __m256 p = _mm256_set1_ps(kInvFact[0]);
  for (int i = 1; i < 6; ++i) p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kInvFact[i]));
  const __m256 one = _mm256_set1_ps(1.0f);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), one);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), one);
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  const __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  // NaN lanes stay NaN, as in the scalar code. (x's min/max already
  // replaced them, so the blend takes v's.)
  return _mm256_blendv_ps(e, v, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
}

void SiluMul(float* gate, const float* up, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 sign = _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0x80000000u)));
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = Exp8(_mm256_xor_ps(g, sign));
    _mm256_storeu_ps(gate + i, _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(one, e)), _mm256_loadu_ps(up + i)));
  }
  SiluMulScalar(gate + i, up + i, n - i);
}

}  // namespace

SiluMulFn SiluMulAvx2() { return SiluMul; }

}  // namespace swiftlet
