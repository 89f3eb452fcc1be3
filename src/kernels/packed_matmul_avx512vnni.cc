// Packed-layout matmul kernels for AVX-512 VNNI (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c; called only when
// CPUID reports them): one 16-row group per ZMM register, VPDPBUSD for
// the byte products. The tiles: packed_matmul_tiles.inc.

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

#include "kernels/lanes16_zmm.inc"

using VecI = __m512i;

inline VecI LoadLine(const uint8_t* p) { return _mm512_loadu_si512(p); }
inline VecI ZeroI() { return _mm512_setzero_si512(); }
inline VecI SplatI(int32_t v) { return _mm512_set1_epi32(v); }
inline VecI SplatBytes(char v) { return _mm512_set1_epi8(v); }
inline VecI Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}
inline VecI And(VecI a, VecI b) { return _mm512_and_si512(a, b); }
inline VecI Or(VecI a, VecI b) { return _mm512_or_si512(a, b); }
inline VecI ShiftLeft16(VecI v, int n) { return _mm512_slli_epi16(v, n); }
inline VecI ShiftRight16(VecI v, int n) { return _mm512_srli_epi16(v, n); }
inline VecI AddI(VecI a, VecI b) { return _mm512_add_epi32(a, b); }
inline VecI MulLoI(VecI a, VecI b) { return _mm512_mullo_epi32(a, b); }
inline VecI DotBytes(VecI acc, VecI u, VecI s) { return _mm512_dpbusd_epi32(acc, u, s); }
constexpr int kQ8Offset = 128;
inline VecI DotQ8(VecI acc, VecI code, VecI x) { return _mm512_dpbusd_epi32(acc, code, x); }
inline VecI DotPairs(VecI acc, VecI a, VecI b) { return _mm512_dpwssd_epi32(acc, a, b); }
inline VecI WidenU8(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline VecI WidenS8(const uint8_t* p) {
  return _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
inline VecI WidenU8Pairs(const uint8_t* p) {
  return _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline VecF ToFloat(VecI v) { return _mm512_cvtepi32_ps(v); }

#include "kernels/packed_matmul_tiles.inc"

}  // namespace

// Decode takes four groups per tile; batched Q8_0 three (its 12
// accumulators fit), the other types pairs (tiles.inc, Kernel).
PackedKernelFn PackedKernelAvx512Vnni(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0:
      return Kernel<4, WholeRow<Tile32<false, 4, 1>>, kRows32<false, 3>, kRows32<false, 2>, kRows32<false, 1>>;
    case TensorType::kQ4_0: return Kernel<4, WholeRow<Tile32<true, 4, 1>>, nullptr, kRows32<true, 2>, kRows32<true, 1>>;
    case TensorType::kQ4_K:
      return Kernel<4, WholeRow<TileAffineK<false, 4, 1>>, nullptr, kRowsAffineK<false, 2>, kRowsAffineK<false, 1>>;
    case TensorType::kQ5_K:
      return Kernel<4, WholeRow<TileAffineK<true, 4, 1>>, nullptr, kRowsAffineK<true, 2>, kRowsAffineK<true, 1>>;
    case TensorType::kQ6_K: return Kernel<4, WholeRow<TileQ6_K<4, 1>>, nullptr, kRowsQ6_K<2>, kRowsQ6_K<1>>;
    default: return nullptr;
  }
}

}  // namespace swiftlet
