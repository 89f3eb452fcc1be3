// AVX2 SiLU gate (compiled with -mavx2 -mf16c; called only when CPUID
// reports them): silu.cc's operations, in the same order, 8 lanes at a
// time, so every result is bit-identical to the scalar specification; the
// last n % 8 elements take the scalar code itself.
#include "kernels/intrinsics.h"

#include "kernels/kernel_exp.h"
#include "kernels/silu_variants.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_ymm.inc"
#include "kernels/kernel_exp_ymm.inc"

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
