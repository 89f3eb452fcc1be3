// Packed-layout matmul kernels for AVX-512 VNNI (compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mf16c; called only when
// CPUID reports them). Layout and the reason for it: kernels/packed_weights.h.
//
// A tile is kGroups 16-row groups x kActs activation rows. For each block,
// every int32 lane gathers one (row, activation) block sum exactly, the
// codes' offset folded in as the accumulator's starting value; then the
// scalar specification's float steps (vec_dot.cc) run lane-wise. Each
// lane's arithmetic depends only on its own row and activation, so a row's
// result is the same whatever tile, batch or thread computes it.

#include "kernels/intrinsics.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "kernels/packed_matmul_variants.h"

// Every fixed-count loop over tile rows, groups and code vectors is fully
// unrolled: rolled, GCC keeps the accumulator arrays on the stack and
// reloads them around each VPDPBUSD (measured: half the speed).
#define SWIFTLET_UNROLL _Pragma("GCC unroll 32")

namespace swiftlet {
namespace {

inline __m512i Broadcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

// Into L2, a chunk ahead: see Rows.
inline void PrefetchL2(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T1); }

// A one-row tile (decode) also asks for each stream's codes this far ahead
// into L2: the out-of-order window alone keeps too few of its loads in
// flight (bytes/s on this project's VM, measured alternating in one
// process: Q8_0 +1-3%, Q4_0 +2-5%, Q4_K +2-3%, Q6_K +15-17%; 512 bytes
// gave less, 2 and 4 KiB nothing, a T0 hint lost).
constexpr size_t kStreamAhead = 1024;
inline void StreamAhead(const uint8_t* p) { PrefetchL2(p + kStreamAhead); }

inline __m512 HalfLanes(const uint8_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The tile's view of its activation rows.
template <int kActs>
struct ActRows {
  const int8_t* q[kActs];     // quants of block 0
  const float* d[kActs];      // per-block scales
  const int32_t* sum[kActs];  // per-32 sums
  ActRows(const PackedActivations& act, int64_t t0, size_t block_bytes, size_t qs_offset) {
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      q[t] = reinterpret_cast<const int8_t*>(act.rows + (t0 + t) * act.row_bytes + qs_offset);
      d[t] = act.scales + (t0 + t) * act.n_blocks;
      sum[t] = act.sums + (t0 + t) * act.n_blocks * act.sums_per_block;
    }
    block_bytes_ = block_bytes;
  }
  const int8_t* Q(int t, int64_t b) const { return q[t] + b * static_cast<int64_t>(block_bytes_); }
  size_t block_bytes_;
};

template <int kActs, int kGroups>
struct Totals {
  __m512 v[kActs][kGroups];
  // Continues the running sums kept in y when b0 > 0: the same additions in
  // the same order as one pass over all blocks.
  void Load(bool fresh, const float* y, int64_t y_stride) {
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        v[t][g] = fresh ? _mm512_setzero_ps() : _mm512_loadu_ps(y + t * y_stride + 16 * g);
      }
    }
  }
  void Store(float* y, int64_t y_stride) const {
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) _mm512_storeu_ps(y + t * y_stride + 16 * g, v[t][g]);
    }
  }
};

// Q8_0 and Q4_0: sum += float(s) * (d_w * d_a) per 32-element block.
// Q8_0 codes are w + 128, so Σ code*a = Σ w*a + 128 Σ a; Q4_0 codes are
// w + 8 in nibbles, Σ code*a = Σ w*a + 8 Σ a.
template <bool kNibbles, int kGroups, int kActs>
void Tile32(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, int64_t t0,
            int64_t b0, int64_t b1, float* y, int64_t y_stride, uint64_t prefetch) {
  constexpr size_t kCodeBytes = kNibbles ? 8 * kQK : 16 * kQK;
  const size_t ahead = static_cast<size_t>(b1 - b0) * kCodeBytes;
  constexpr int kOffset = kNibbles ? 8 : 128;
  const int64_t nb = act.n_blocks;
  const ActRows<kActs> a(act, t0, sizeof(BlockQ8_0), offsetof(BlockQ8_0, qs));
  Totals<kActs, kGroups> total;
  total.Load(b0 == 0, y + t0 * y_stride, y_stride);
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* q[kGroups];
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) q[g] = groups + g * group_bytes + b * kCodeBytes;
    __m512i acc[kActs][kGroups];
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      const __m512i start = _mm512_set1_epi32(-kOffset * a.sum[t][b]);
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) acc[t][g] = start;
    }
    if constexpr (kNibbles) {
      SWIFTLET_UNROLL
      for (int k = 0; k < kQK / 8; ++k) {
        __m512i lo[kGroups], hi[kGroups];
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) {
          if (prefetch >> k & 1) PrefetchL2(q[g] + 64 * k + ahead);
          if constexpr (kActs == 1) StreamAhead(q[g] + 64 * k);
          const __m512i v = _mm512_loadu_si512(q[g] + 64 * k);
          lo[g] = _mm512_and_si512(v, low);
          hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        }
        SWIFTLET_UNROLL
        for (int t = 0; t < kActs; ++t) {
          const __m512i xl = Broadcast4(a.Q(t, b) + 8 * k);
          const __m512i xh = Broadcast4(a.Q(t, b) + 8 * k + 4);
          SWIFTLET_UNROLL
          for (int g = 0; g < kGroups; ++g) {
            acc[t][g] = _mm512_dpbusd_epi32(acc[t][g], lo[g], xl);
            acc[t][g] = _mm512_dpbusd_epi32(acc[t][g], hi[g], xh);
          }
        }
      }
    } else {
      SWIFTLET_UNROLL
      for (int k = 0; k < kQK / 4; ++k) {
        __m512i w[kGroups];
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) {
          if (prefetch >> k & 1) PrefetchL2(q[g] + 64 * k + ahead);
          if constexpr (kActs == 1) StreamAhead(q[g] + 64 * k);
          w[g] = _mm512_loadu_si512(q[g] + 64 * k);
        }
        SWIFTLET_UNROLL
        for (int t = 0; t < kActs; ++t) {
          const __m512i x = Broadcast4(a.Q(t, b) + 4 * k);
          SWIFTLET_UNROLL
          for (int g = 0; g < kGroups; ++g) acc[t][g] = _mm512_dpbusd_epi32(acc[t][g], w[g], x);
        }
      }
    }
    __m512 dw[kGroups];
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) dw[g] = HalfLanes(groups + g * group_bytes + nb * kCodeBytes + b * 32);
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      const __m512 da = _mm512_set1_ps(a.d[t][b]);
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        const __m512 scale = _mm512_mul_ps(dw[g], da);
        total.v[t][g] = _mm512_add_ps(total.v[t][g], _mm512_mul_ps(_mm512_cvtepi32_ps(acc[t][g]), scale));
      }
    }
  }
  total.Store(y + t0 * y_stride, y_stride);
}

// Bit m of each byte of a Q5_K fifth-bit vector, moved to bit 4 (the
// 16-bit shifts bring no bit of the neighbouring byte to that place).
inline __m512i FifthBit(__m512i high, int m) {
  const __m512i bit4 = _mm512_set1_epi8(0x10);
  return m <= 4 ? _mm512_and_si512(_mm512_slli_epi16(high, 4 - m), bit4)
                : _mm512_and_si512(_mm512_srli_epi16(high, m - 4), bit4);
}

// Q4_K and Q5_K per 256-element block: sumi = Σ_j sc_j Σ q*a, summ =
// Σ_j m_j Σ a, sum += d*float(sumi) - dmin*float(summ), d = d_w*d_a,
// dmin = dmin_w*d_a. Q5_K's codes take their fifth bit from the 64 bytes
// per sub-block after the nibbles.
template <bool kFifthBit, int kGroups, int kActs>
void TileAffineK(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, int64_t t0,
                 int64_t b0, int64_t b1, float* y, int64_t y_stride, uint64_t prefetch) {
  constexpr size_t kNibbleBytes = 8 * kQK_K;
  constexpr size_t kCodeBytes = kNibbleBytes + (kFifthBit ? 2 * kQK_K : 0);
  constexpr size_t kScaleBytes = 16 * 8 + 16 * 8 + 2 * 32;
  const size_t ahead = static_cast<size_t>(b1 - b0) * kCodeBytes;
  const int64_t nb = act.n_blocks;
  const ActRows<kActs> a(act, t0, sizeof(BlockQ8_K), offsetof(BlockQ8_K, qs));
  Totals<kActs, kGroups> total;
  total.Load(b0 == 0, y + t0 * y_stride, y_stride);
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* q[kGroups];
    const uint8_t* sc[kGroups];
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) {
      q[g] = groups + g * group_bytes + b * kCodeBytes;
      sc[g] = groups + g * group_bytes + nb * kCodeBytes + b * kScaleBytes;
    }
    __m512i sumi[kActs][kGroups];
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) sumi[t][g] = _mm512_setzero_si512();
    }
    for (int j = 0; j < 8; ++j) {
      __m512i s[kActs][kGroups];
      SWIFTLET_UNROLL
      for (int t = 0; t < kActs; ++t) {
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) s[t][g] = _mm512_setzero_si512();
      }
      __m512i high[kGroups];
      if constexpr (kFifthBit) {
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) {
          // Lines 0-31 the nibbles, 32-39 the fifth bits.
          if (prefetch >> (32 + j) & 1) PrefetchL2(q[g] + kNibbleBytes + 64 * j + ahead);
          if constexpr (kActs == 1) StreamAhead(q[g] + kNibbleBytes + 64 * j);
          high[g] = _mm512_loadu_si512(q[g] + kNibbleBytes + 64 * j);
        }
      }
      SWIFTLET_UNROLL
      for (int k = 0; k < 4; ++k) {
        __m512i lo[kGroups], hi[kGroups];
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) {
          if (prefetch >> (4 * j + k) & 1) PrefetchL2(q[g] + 64 * (4 * j + k) + ahead);
          if constexpr (kActs == 1) StreamAhead(q[g] + 64 * (4 * j + k));
          const __m512i v = _mm512_loadu_si512(q[g] + 64 * (4 * j + k));
          lo[g] = _mm512_and_si512(v, low);
          hi[g] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
          if constexpr (kFifthBit) {
            lo[g] = _mm512_or_si512(lo[g], FifthBit(high[g], 2 * k));
            hi[g] = _mm512_or_si512(hi[g], FifthBit(high[g], 2 * k + 1));
          }
        }
        SWIFTLET_UNROLL
        for (int t = 0; t < kActs; ++t) {
          const int8_t* x = a.Q(t, b) + 32 * j + 8 * k;
          const __m512i xl = Broadcast4(x), xh = Broadcast4(x + 4);
          SWIFTLET_UNROLL
          for (int g = 0; g < kGroups; ++g) {
            s[t][g] = _mm512_dpbusd_epi32(s[t][g], lo[g], xl);
            s[t][g] = _mm512_dpbusd_epi32(s[t][g], hi[g], xh);
          }
        }
      }
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        const __m512i scale = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc[g] + 16 * j)));
        SWIFTLET_UNROLL
        for (int t = 0; t < kActs; ++t) {
          sumi[t][g] = _mm512_add_epi32(sumi[t][g], _mm512_mullo_epi32(scale, s[t][g]));
        }
      }
    }
    // summ = Σ_j m_j Σa_j, two sub-blocks per VPDPWSSD: the minimums are
    // stored in pairs per row and the activation sums (|Σa| <= 32 * 128)
    // fit 16 bits (a batch of 16 +3-5%, 128 rows +5% against a VPMULLD and
    // an add per sub-block).
    __m512i pair[kActs][4], summ[kActs][kGroups];
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      SWIFTLET_UNROLL
      for (int p = 0; p < 4; ++p) {
        const int32_t* s2 = a.sum[t] + b * 8 + 2 * p;
        pair[t][p] = _mm512_set1_epi32(static_cast<int32_t>((static_cast<uint32_t>(s2[0]) & 0xFFFFu) |
                                                            static_cast<uint32_t>(s2[1]) << 16));
      }
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) summ[t][g] = _mm512_setzero_si512();
    }
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) {
      SWIFTLET_UNROLL
      for (int p = 0; p < 4; ++p) {
        const __m512i mins = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(sc[g] + 128 + 32 * p)));
        SWIFTLET_UNROLL
        for (int t = 0; t < kActs; ++t) summ[t][g] = _mm512_dpwssd_epi32(summ[t][g], mins, pair[t][p]);
      }
    }
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) {
      const __m512 dw = HalfLanes(sc[g] + 256), dminw = HalfLanes(sc[g] + 288);
      SWIFTLET_UNROLL
      for (int t = 0; t < kActs; ++t) {
        const __m512 da = _mm512_set1_ps(a.d[t][b]);
        const __m512 d = _mm512_mul_ps(dw, da), dmin = _mm512_mul_ps(dminw, da);
        const __m512 part = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(sumi[t][g])),
                                          _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(summ[t][g])));
        total.v[t][g] = _mm512_add_ps(total.v[t][g], part);
      }
    }
  }
  total.Store(y + t0 * y_stride, y_stride);
}

// Q6_K per 256-element block: sumi = Σ_m sc_m (Σ code*a - 32 Σ a) over
// 16-element groups m, sum += (d_w * d_a) * float(sumi).
template <int kGroups, int kActs>
void TileQ6_K(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, int64_t t0,
              int64_t b0, int64_t b1, float* y, int64_t y_stride, uint64_t prefetch) {
  constexpr size_t kCodeBytes = 12 * kQK_K;
  constexpr size_t kScaleBytes = 16 * 16 + 32;
  const size_t ahead = static_cast<size_t>(b1 - b0) * kCodeBytes;
  const int64_t nb = act.n_blocks;
  const ActRows<kActs> a(act, t0, sizeof(BlockQ8_K), offsetof(BlockQ8_K, qs));
  Totals<kActs, kGroups> total;
  total.Load(b0 == 0, y + t0 * y_stride, y_stride);
  const __m512i low = _mm512_set1_epi8(0x0F);
  const __m512i top = _mm512_set1_epi8(0x30);
  for (int64_t b = b0; b < b1; ++b) {
    const uint8_t* q[kGroups];
    const uint8_t* sc[kGroups];
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) {
      q[g] = groups + g * group_bytes + b * kCodeBytes;
      sc[g] = groups + g * group_bytes + nb * kCodeBytes + b * kScaleBytes;
    }
    __m512i sumi[kActs][kGroups];
    SWIFTLET_UNROLL
    for (int t = 0; t < kActs; ++t) {
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) sumi[t][g] = _mm512_setzero_si512();
    }
    for (int m = 0; m < 16; ++m) {
      __m512i c[kGroups][4];
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        // Lines 0-31 the low bits, 32-47 the high bits.
        if (prefetch >> (2 * m) & 1) PrefetchL2(q[g] + 64 * (2 * m) + ahead);
        if (prefetch >> (2 * m + 1) & 1) PrefetchL2(q[g] + 64 * (2 * m + 1) + ahead);
        if (prefetch >> (32 + m) & 1) PrefetchL2(q[g] + 2048 + 64 * m + ahead);
        if constexpr (kActs == 1) {
          StreamAhead(q[g] + 64 * (2 * m));
          StreamAhead(q[g] + 64 * (2 * m + 1));
          StreamAhead(q[g] + 2048 + 64 * m);
        }
        const __m512i v0 = _mm512_loadu_si512(q[g] + 64 * (2 * m));
        const __m512i v1 = _mm512_loadu_si512(q[g] + 64 * (2 * m + 1));
        const __m512i h = _mm512_loadu_si512(q[g] + 2048 + 64 * m);
        c[g][0] = _mm512_or_si512(_mm512_and_si512(v0, low), _mm512_and_si512(_mm512_slli_epi16(h, 4), top));
        c[g][1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v0, 4), low),
                                  _mm512_and_si512(_mm512_slli_epi16(h, 2), top));
        c[g][2] = _mm512_or_si512(_mm512_and_si512(v1, low), _mm512_and_si512(h, top));
        c[g][3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v1, 4), low),
                                  _mm512_and_si512(_mm512_srli_epi16(h, 2), top));
      }
      __m512i scale[kGroups];
      SWIFTLET_UNROLL
      for (int g = 0; g < kGroups; ++g) {
        scale[g] = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(sc[g] + 16 * m)));
      }
      SWIFTLET_UNROLL
      for (int t = 0; t < kActs; ++t) {
        const int8_t* x = a.Q(t, b) + 16 * m;
        const __m512i start = _mm512_set1_epi32(-32 * a.sum[t][b * 16 + m]);
        __m512i s[kGroups];
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) s[g] = start;
        SWIFTLET_UNROLL
        for (int k = 0; k < 4; ++k) {
          const __m512i xk = Broadcast4(x + 4 * k);
          SWIFTLET_UNROLL
          for (int g = 0; g < kGroups; ++g) s[g] = _mm512_dpbusd_epi32(s[g], c[g][k], xk);
        }
        SWIFTLET_UNROLL
        for (int g = 0; g < kGroups; ++g) sumi[t][g] = _mm512_add_epi32(sumi[t][g], _mm512_mullo_epi32(scale[g], s[g]));
      }
    }
    SWIFTLET_UNROLL
    for (int g = 0; g < kGroups; ++g) {
      const __m512 dw = HalfLanes(sc[g] + 256);
      SWIFTLET_UNROLL
      for (int t = 0; t < kActs; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(a.d[t][b]));
        total.v[t][g] = _mm512_add_ps(total.v[t][g], _mm512_mul_ps(d, _mm512_cvtepi32_ps(sumi[t][g])));
      }
    }
  }
  total.Store(y + t0 * y_stride, y_stride);
}

// `prefetch`: which 64-byte lines of each block's codes the tile asks
// for in the next chunk (bit i: line i; Rows).
using TileFn = void (*)(const uint8_t* groups, size_t group_bytes, const PackedActivations& act,
                       int64_t t0, int64_t b0, int64_t b1, float* y, int64_t y_stride,
                       uint64_t prefetch);
using RowsFn = void (*)(const uint8_t* groups, size_t group_bytes, const PackedActivations& act,
                       float* y, int64_t y_stride);

// Up to four activation rows per tile, the rest in smaller tiles. Blocks
// are taken in chunks of about 16 KiB of weights, and every activation row
// runs over a chunk before the next, so the weights come from L1 for all
// but the first tile of rows. The tiles also request the next chunk's codes
// into L2, each tile its share of every block's 64-byte lines (kLines of
// them per group), so memory streams while the chunk computes instead of
// each chunk starting with a stall, and the requests are spread over the
// chunk rather than issued in one burst. Measured alternating the variants
// in one process, a batch of 16: the first tile asking for everything gave
// Q8_0 +10%, spreading it another +3-4%; Q4_K +8%, Q6_K +19-24%
// (docs/PERFORMANCE.md).
template <int kLines>
uint64_t PrefetchLines(int64_t tile, int64_t tiles) {
  static_assert(kLines <= 64);
  const int64_t shares = std::min<int64_t>(tiles, kLines);
  if (tiles < 2 || tile >= shares) return 0;  // one tile: nothing to overlap with.
  const int64_t lo = kLines * tile / shares, hi = kLines * (tile + 1) / shares;
  const uint64_t below_hi = hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1;
  return below_hi & ~((uint64_t{1} << lo) - 1);
}

template <TileFn kTile4, TileFn kTile3, TileFn kTile2, TileFn kTile1, int64_t kChunkBlocks, int kLines>
void Rows(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, float* y,
          int64_t y_stride) {
  const int64_t tiles = (act.n_rows + 3) / 4;
  for (int64_t b0 = 0; b0 < act.n_blocks; b0 += kChunkBlocks) {
    const int64_t b1 = std::min(act.n_blocks, b0 + kChunkBlocks);
    const bool last = b1 == act.n_blocks;
    auto lines = [&](int64_t t) { return last ? 0 : PrefetchLines<kLines>(t / 4, tiles); };
    int64_t t = 0;
    for (; t + 4 <= act.n_rows; t += 4) kTile4(groups, group_bytes, act, t, b0, b1, y, y_stride, lines(t));
    switch (act.n_rows - t) {
      case 3: kTile3(groups, group_bytes, act, t, b0, b1, y, y_stride, lines(t)); break;
      case 2: kTile2(groups, group_bytes, act, t, b0, b1, y, y_stride, lines(t)); break;
      case 1: kTile1(groups, group_bytes, act, t, b0, b1, y, y_stride, lines(t)); break;
      default: break;
    }
  }
}

template <bool kNibbles, int kGroups>
constexpr RowsFn kRows32 = Rows<Tile32<kNibbles, kGroups, 4>, Tile32<kNibbles, kGroups, 3>,
                                Tile32<kNibbles, kGroups, 2>, Tile32<kNibbles, kGroups, 1>, 16, kNibbles ? 4 : 8>;
template <bool kFifthBit, int kGroups>
constexpr RowsFn kRowsAffineK =
    Rows<TileAffineK<kFifthBit, kGroups, 4>, TileAffineK<kFifthBit, kGroups, 3>,
         TileAffineK<kFifthBit, kGroups, 2>, TileAffineK<kFifthBit, kGroups, 1>, 2, kFifthBit ? 40 : 32>;
template <int kGroups>
constexpr RowsFn kRowsQ6_K = Rows<TileQ6_K<kGroups, 4>, TileQ6_K<kGroups, 3>,
                                  TileQ6_K<kGroups, 2>, TileQ6_K<kGroups, 1>, 2, 48>;

// One activation row over all blocks (no chunks: nothing to reuse).
template <TileFn kTile>
void WholeRow(const uint8_t* groups, size_t group_bytes, const PackedActivations& act, float* y,
              int64_t y_stride) {
  kTile(groups, group_bytes, act, 0, 0, act.n_blocks, y, y_stride, 0);
}

// A single activation row (decode) takes four groups at a time: four
// weight streams and four independent accumulator chains keep more loads
// in flight than two (the decode matmuls stream 7-22% more bytes per
// second on this project's VM, docs/PERFORMANCE.md). Several rows take
// three groups at a time where the type has such a tile (Q8_0: 12
// accumulators + 12 totals + 3 weight vectors fit the 32 registers; a
// batch of 16 +4%, 128 rows +9%; Q4_0's unpacked nibbles would not fit,
// the K types' sub-block sums need more), else pairs. Then the rest.
template <RowsFn kGemv4, RowsFn kRows3, RowsFn kRows2, RowsFn kRows1>
void Kernel(const uint8_t* groups, int64_t n_groups, size_t group_bytes,
            const PackedActivations& act, float* y, int64_t y_stride) {
  int64_t g = 0;
  if (act.n_rows == 1) {
    for (; g + 4 <= n_groups; g += 4) kGemv4(groups + g * group_bytes, group_bytes, act, y + 16 * g, y_stride);
  } else if constexpr (kRows3 != nullptr) {
    for (; g + 3 <= n_groups; g += 3) kRows3(groups + g * group_bytes, group_bytes, act, y + 16 * g, y_stride);
  }
  for (; g + 2 <= n_groups; g += 2) kRows2(groups + g * group_bytes, group_bytes, act, y + 16 * g, y_stride);
  if (g < n_groups) kRows1(groups + g * group_bytes, group_bytes, act, y + 16 * g, y_stride);
}

}  // namespace

PackedKernelFn PackedKernelAvx512Vnni(TensorType type) {
  switch (type) {
    case TensorType::kQ8_0: return Kernel<WholeRow<Tile32<false, 4, 1>>, kRows32<false, 3>, kRows32<false, 2>, kRows32<false, 1>>;
    case TensorType::kQ4_0: return Kernel<WholeRow<Tile32<true, 4, 1>>, nullptr, kRows32<true, 2>, kRows32<true, 1>>;
    case TensorType::kQ4_K:
      return Kernel<WholeRow<TileAffineK<false, 4, 1>>, nullptr, kRowsAffineK<false, 2>, kRowsAffineK<false, 1>>;
    case TensorType::kQ5_K:
      return Kernel<WholeRow<TileAffineK<true, 4, 1>>, nullptr, kRowsAffineK<true, 2>, kRowsAffineK<true, 1>>;
    case TensorType::kQ6_K: return Kernel<WholeRow<TileQ6_K<4, 1>>, nullptr, kRowsQ6_K<2>, kRowsQ6_K<1>>;
    default: return nullptr;
  }
}

}  // namespace swiftlet
