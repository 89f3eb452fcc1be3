// Packed-layout matmul kernels for AVX-VNNI, the VEX-encoded VPDPBUSD and
// VPDPWSSD on 256-bit registers of CPUs without AVX-512 (Alder Lake and
// later; compiled with -mavx2 -mfma -mf16c -mavxvnni, called only when
// CPUID reports them).

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

inline __m256i DotBytes8(__m256i acc, __m256i u, __m256i s) { return _mm256_dpbusd_avx_epi32(acc, u, s); }
constexpr int kQ8Offset = 128;
inline __m256i DotQ8_8(__m256i acc, __m256i code, __m256i x) { return _mm256_dpbusd_avx_epi32(acc, code, x); }
inline __m256i DotPairs8(__m256i acc, __m256i a, __m256i b) { return _mm256_dpwssd_avx_epi32(acc, a, b); }

#include "kernels/packed_matmul_ymm.inc"

}  // namespace

PackedKernelFn PackedKernelAvxVnni(TensorType type) { return KernelTable(type); }

}  // namespace swiftlet
