// Packed-layout matmul kernels for AVX-512 VNNI (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c; called only when
// CPUID reports them): VPDPBUSD and VPDPWSSD sum the byte and word products
// straight into int32. The kernels: packed_matmul_zmm.inc.

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

inline __m512i DotBytes(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }
constexpr int kQ8Offset = 128;
inline __m512i DotQ8(__m512i acc, __m512i code, __m512i x) { return _mm512_dpbusd_epi32(acc, code, x); }
inline __m512i DotPairs(__m512i acc, __m512i a, __m512i b) { return _mm512_dpwssd_epi32(acc, a, b); }

#include "kernels/packed_matmul_zmm.inc"

}  // namespace

PackedKernelFn PackedKernelAvx512Vnni(TensorType type) { return KernelTable(type); }

}  // namespace swiftlet
