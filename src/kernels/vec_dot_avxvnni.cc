// AVX-VNNI dot products (compiled with -mavx2 -mfma -mf16c -mavxvnni;
// called only when CPUID reports AVX-VNNI): the VEX-encoded VPDPBUSD of
// CPUs without AVX-512 sums u8 x s8 products straight into int32.
#include "kernels/intrinsics.h"

#include "kernels/float16.h"
#include "kernels/quant_blocks.h"
#include "kernels/vec_dot_variants.h"

namespace swiftlet {
namespace {

inline __m256i DotU8S8(__m256i u, __m256i s) {
  return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, s);
}

}  // namespace

#include "kernels/vec_dot_simd.inc"

VecDotFn VecDotAvxVnni(TensorType weight_type) { return Table(weight_type); }

}  // namespace swiftlet
