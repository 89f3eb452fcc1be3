// Float to half rows with F16C (compiled with -mavx -mf16c; called only when
// CPUID reports them). _mm256_cvtps_ph rounds to nearest even and quiets
// NaNs keeping their top payload bits, exactly as float16.cc's Fp32ToFp16.
#include <immintrin.h>

#include <cstdint>

#include "kernels/float16.h"

namespace swiftlet {

void Fp32ToFp16RowF16c(const float* x, uint16_t* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i] = Fp32ToFp16(x[i]);
}

}  // namespace swiftlet
