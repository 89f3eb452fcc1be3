// AVX2 dot products (compiled with -mavx2 -mfma -mf16c; called only when
// CPUID reports AVX2).
#include <immintrin.h>

#include "kernels/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_variants.h"

namespace swiftlet {
namespace {

// Adjacent u8 x s8 products summed to int16, then to int32. The int16 step
// saturates only past ±32767; every caller keeps the u8 side <= 128 and the
// s8 side >= -128, so a pair sum lies within [-32768, 32512]: exact.
inline __m256i DotU8S8(__m256i u, __m256i s) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
}

}  // namespace

#include "kernels/vec_dot_simd.inc"

VecDotFn VecDotAvx2(TensorType weight_type) { return Table(weight_type); }

}  // namespace swiftlet
