// Packed-layout matmul kernels for AVX-512 F/BW/VL without VNNI (Skylake-SP
// and -X; compiled with -mavx512f -mavx512bw -mavx512vl -mf16c, called only
// when CPUID reports them). The byte products go through VPMADDUBSW, whose
// int16 pair sums saturate past ±32767: exact for codes <= 63 against
// activations in [-128, 127] (|pair| <= 16128), not for Q8_0's codes up to
// 255, so Q8_0 multiplies the signed weights, |w| x (x negated where w < 0)
// (|pair| <= 2 x 128 x 127), and needs no offset; that needs x >= -127,
// which the Q8_0 activation quantizer guarantees. The kernels:
// packed_matmul_zmm.inc.

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

inline __m512i DotBytes(__m512i acc, __m512i u, __m512i s) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(_mm512_maddubs_epi16(u, s), _mm512_set1_epi16(1)));
}
constexpr int kQ8Offset = 0;
inline __m512i DotQ8(__m512i acc, __m512i code, __m512i x) {
  const __m512i w = _mm512_xor_si512(code, _mm512_set1_epi8(static_cast<char>(0x80)));
  const __m512i x_signed = _mm512_mask_sub_epi8(x, _mm512_movepi8_mask(w), _mm512_setzero_si512(), x);
  return DotBytes(acc, _mm512_abs_epi8(w), x_signed);
}
inline __m512i DotPairs(__m512i acc, __m512i a, __m512i b) {
  return _mm512_add_epi32(acc, _mm512_madd_epi16(a, b));
}

#include "kernels/packed_matmul_zmm.inc"

}  // namespace

PackedKernelFn PackedKernelAvx512(TensorType type) { return KernelTable(type); }

}  // namespace swiftlet
