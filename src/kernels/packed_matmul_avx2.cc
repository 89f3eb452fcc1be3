// Packed-layout matmul kernels for AVX2 (compiled with -mavx2 -mfma -mf16c;
// called only when CPUID reports them). Without VNNI the byte products go
// through VPMADDUBSW, whose int16 pair sums saturate past ±32767: exact for
// codes <= 63 against activations in [-128, 127] (|pair| <= 16128), but not
// for Q8_0's codes up to 255, so Q8_0 multiplies the signed weights
// (|w| x (x with w's sign), |pair| <= 2 x 128 x 127) and needs no offset;
// that needs x >= -127, which the Q8_0 activation quantizer guarantees.

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

inline __m256i DotBytes8(__m256i acc, __m256i u, __m256i s) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1)));
}
constexpr int kQ8Offset = 0;
inline __m256i DotQ8_8(__m256i acc, __m256i code, __m256i x) {
  const __m256i w = _mm256_xor_si256(code, _mm256_set1_epi8(static_cast<char>(0x80)));
  return DotBytes8(acc, _mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}
inline __m256i DotPairs8(__m256i acc, __m256i a, __m256i b) {
  return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b));
}

#include "kernels/packed_matmul_ymm.inc"

}  // namespace

PackedKernelFn PackedKernelAvx2(TensorType type) { return KernelTable(type); }

}  // namespace swiftlet
