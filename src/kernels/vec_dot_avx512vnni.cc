// AVX-512 VNNI dot products on 256-bit registers (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only when CPUID
// reports them). VPDPBUSD sums u8 x s8 products straight into int32,
// without the int16 step of the AVX2 variant.
#include <immintrin.h>

#include "kernels/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_variants.h"

namespace swiftlet {
namespace {

inline __m256i DotU8S8(__m256i u, __m256i s) {
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s);
}

}  // namespace

#include "kernels/vec_dot_simd.inc"

VecDotFn VecDotAvx512Vnni(TensorType weight_type) { return Table(weight_type); }

}  // namespace swiftlet
