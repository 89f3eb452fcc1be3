// Packed-layout matmul kernels for AVX-512 VNNI (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c; called only when
// CPUID reports them). Layout and the reason for it: kernels/packed_weights.h.
//
// A tile is kGroups 16-row groups x kActs activation rows. For each block,
// every int32 lane gathers one (row, activation) block sum exactly, the
// block offset folded in as the accumulator's starting value; then the
// scalar specification's float steps run lane-wise:
//   sum += float(s) * (d_w * d_a).
// Each lane's arithmetic depends only on its own row and activation, so a
// row's result is the same whatever tile, batch or thread computes it.
// GCC 12 reports _mm512_undefined_ps() inside its own conversion intrinsics
// as maybe-uninitialized (a known false positive of its headers).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Every loop over tile rows, groups and block lanes carries
// "#pragma GCC unroll": unrolled, the accumulators stay in registers;
// rolled, GCC keeps the arrays on the stack and reloads them per VPDPBUSD.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

namespace swiftlet {
namespace {

inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// The weight-side work of one block for one tile: fills the int32 sums.
// Q8_0: codes are w + 128, so Σ code*a = Σ w*a + 128 Σ a.
template <int kGroups, int kActs>
inline void BlockSumsQ8_0(const uint8_t* const* q, const BlockQ8_0* const* a,
                          const int32_t* const* sums, int64_t b, __m512i (&acc)[kActs][kGroups]) {
  #pragma GCC unroll 16
  for (int t = 0; t < kActs; ++t) {
    const __m512i start = _mm512_set1_epi32(-128 * sums[t][b]);
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) acc[t][g] = start;
  }
  #pragma GCC unroll 16
  for (int k = 0; k < kQK / 4; ++k) {
    __m512i w[kGroups];
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) w[g] = _mm512_loadu_si512(q[g] + 64 * k);
    #pragma GCC unroll 16
    for (int t = 0; t < kActs; ++t) {
      const __m512i x = Broadcast4(a[t][b].qs + 4 * k);
      #pragma GCC unroll 16
      for (int g = 0; g < kGroups; ++g) acc[t][g] = _mm512_dpbusd_epi32(acc[t][g], w[g], x);
    }
  }
}

// Q4_0: codes are w + 8 in nibbles, so Σ code*a = Σ w*a + 8 Σ a.
template <int kGroups, int kActs>
inline void BlockSumsQ4_0(const uint8_t* const* q, const BlockQ8_0* const* a,
                          const int32_t* const* sums, int64_t b, __m512i (&acc)[kActs][kGroups]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  #pragma GCC unroll 16
  for (int t = 0; t < kActs; ++t) {
    const __m512i start = _mm512_set1_epi32(-8 * sums[t][b]);
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) acc[t][g] = start;
  }
  #pragma GCC unroll 16
  for (int k = 0; k < kQK / 8; ++k) {
    __m512i lo[kGroups], hi[kGroups];
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) {
      const __m512i v = _mm512_loadu_si512(q[g] + 64 * k);
      lo[g] = _mm512_and_si512(v, low);
      hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
    }
    #pragma GCC unroll 16
    for (int t = 0; t < kActs; ++t) {
      const __m512i xl = Broadcast4(a[t][b].qs + 8 * k);
      const __m512i xh = Broadcast4(a[t][b].qs + 8 * k + 4);
      #pragma GCC unroll 16
      for (int g = 0; g < kGroups; ++g) {
        acc[t][g] = _mm512_dpbusd_epi32(acc[t][g], lo[g], xl);
        acc[t][g] = _mm512_dpbusd_epi32(acc[t][g], hi[g], xh);
      }
    }
  }
}

enum class Codes { kQ8_0, kQ4_0 };

// Blocks [b0, b1) of the tile, continuing the running sums kept in y when
// b0 > 0 (the same additions in the same order as one pass over all blocks).
template <Codes kCodes, int kGroups, int kActs>
void Tile(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, int64_t t0,
          int64_t b0, int64_t b1, float* y, int64_t y_stride) {
  constexpr size_t kCodeBytes = kCodes == Codes::kQ8_0 ? 16 * kQK : 8 * kQK;
  const int64_t nb = act.n_blocks;
  const BlockQ8_0* a[kActs];
  const int32_t* sums[kActs];
  const float* da[kActs];
  #pragma GCC unroll 16
  for (int t = 0; t < kActs; ++t) {
    a[t] = act.blocks + (t0 + t) * nb;
    sums[t] = act.sums + (t0 + t) * nb;
    da[t] = act.scales + (t0 + t) * nb;
  }
  __m512 total[kActs][kGroups];
  #pragma GCC unroll 16
  for (int t = 0; t < kActs; ++t) {
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) {
      total[t][g] = b0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(y + (t0 + t) * y_stride + 16 * g);
    }
  }
  #pragma GCC unroll 16
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* q[kGroups];
    const uint8_t* d[kGroups];
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) {
      q[g] = groups + g * group_bytes + b * kCodeBytes;
      d[g] = groups + g * group_bytes + nb * kCodeBytes + b * kPackedScaleBytes;
    }
    __m512i acc[kActs][kGroups];
    if constexpr (kCodes == Codes::kQ8_0) {
      BlockSumsQ8_0<kGroups, kActs>(q, a, sums, b, acc);
    } else {
      BlockSumsQ4_0<kGroups, kActs>(q, a, sums, b, acc);
    }
    __m512 dw[kGroups];
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) {
      dw[g] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(d[g])));
    }
    #pragma GCC unroll 16
    for (int t = 0; t < kActs; ++t) {
      const __m512 dat = _mm512_set1_ps(da[t][b]);
      #pragma GCC unroll 16
      for (int g = 0; g < kGroups; ++g) {
        const __m512 scale = _mm512_mul_ps(dw[g], dat);
        total[t][g] = _mm512_add_ps(total[t][g], _mm512_mul_ps(_mm512_cvtepi32_ps(acc[t][g]), scale));
      }
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kActs; ++t) {
    #pragma GCC unroll 16
    for (int g = 0; g < kGroups; ++g) {
      _mm512_storeu_ps(y + (t0 + t) * y_stride + 16 * g, total[t][g]);
    }
  }
}

// Pairs of groups (each weight load feeds up to 8 VPDPBUSD) by up to four
// activation rows; the rest in smaller tiles. The blocks are taken in
// chunks that fit the L1 cache with room to spare, and every activation
// row runs over a chunk before the next is loaded, so the weights come from
// L1 rather than L2 for all but the first four rows.
template <Codes kCodes, int kGroups>
void Rows(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, float* y,
          int64_t y_stride) {
  constexpr int64_t kChunkBlocks = 16;
  #pragma GCC unroll 16
  for (int64_t b0 = 0; b0 < act.n_blocks; b0 += kChunkBlocks) {
    const int64_t b1 = std::min(act.n_blocks, b0 + kChunkBlocks);
    int64_t t = 0;
    for (; t + 4 <= act.n_rows; t += 4) {
      Tile<kCodes, kGroups, 4>(groups, group_bytes, act, t, b0, b1, y, y_stride);
    }
    switch (act.n_rows - t) {
      case 3: Tile<kCodes, kGroups, 3>(groups, group_bytes, act, t, b0, b1, y, y_stride); break;
      case 2: Tile<kCodes, kGroups, 2>(groups, group_bytes, act, t, b0, b1, y, y_stride); break;
      case 1: Tile<kCodes, kGroups, 1>(groups, group_bytes, act, t, b0, b1, y, y_stride); break;
      default: break;
    }
  }
}

template <Codes kCodes>
void Kernel(const uint8_t* groups, int64_t n_groups, size_t group_bytes,
            const PackedActivations& act, float* y, int64_t y_stride) {
  int64_t g = 0;
  for (; g + 2 <= n_groups; g += 2) {
    Rows<kCodes, 2>(groups + g * group_bytes, group_bytes, act, y + 16 * g, y_stride);
  }
  if (g < n_groups) Rows<kCodes, 1>(groups + g * group_bytes, group_bytes, act, y + 16 * g, y_stride);
}

}  // namespace

PackedKernelFn PackedKernelAvx512Vnni(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0: return Kernel<Codes::kQ8_0>;
    case TensorType::kQ4_0: return Kernel<Codes::kQ4_0>;
    default: return nullptr;
  }
}

}  // namespace swiftlet
