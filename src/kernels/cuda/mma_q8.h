// Quantized matmuls on the tensor cores: the warp-level integer
// multiply-accumulate mma.sync.m16n8k16.row.col.s32.s8.s8.s32 (sm_80 and
// later) takes 16 weight rows and 8 activation rows (batch rows) and gives
// their exact 16-element integer dot products; two of them (k-tiles 0 and
// 1) cover one block of 32 of both, whose quants line up (activations are
// quantized in blocks of 32, weight_slices.h's kActivationBlock). Weights:
// Q8_0 and Q4_0 (a block of 32 is one of theirs), and the K quants Q4_K,
// Q5_K and Q6_K (a block of 32 is a sub-block of their 256: two of Q6_K's
// sub-blocks of 16, one k-tile each).
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with integer
// type"), for lane L, g = L / 4, t = L % 4:
//   A (16 x 16, weights): register 0 holds row g, register 1 row g + 8;
//       byte i of each is column 4t + i;
//   B (16 x 8, activations): one register, column (batch row) g; byte i is
//       row (element) 4t + i;
//   C (16 x 8, int32): c0, c1 are row g, columns 2t and 2t + 1; c2, c3
//       are row g + 8, the same columns.
// Q4_0's nibbles fit A as they are stored: byte 4t + i of a block holds
// elements 4t + i (low nibble, k-tile 0) and 16 + 4t + i (high, k-tile 1).
// The K quants' sub-blocks of 32 are 32 bytes' low or high nibbles (Q5_K
// with a bit of qh beside), Q6_K's a quadrant's nibbles and 2-bit highs.
//
// The reduction order (what makes results batch invariant, and the same
// bits in every kernel that keeps it): for output row o and batch row r,
//   y = P_0 + P_1 + ... + P_{kSplit-1}, left to right, where P_w takes the
//   w-th of kSplit contiguous runs of the row's nb blocks of 32, b from
//   w * c to min(nb, (w + 1) * c) - 1 with c = ceil(nb / kSplit) (the last
//   runs shorter, or empty), in order, each by its type's steps:
//     one scale (Q8_0, Q4_0):  P = fma(c0 + c1, s * dX, P)
//     with a min (Q4_K, Q5_K): the same, then P = fma(sX, -m * dX, P)
//     a scale per k-tile (Q6_K): P = fma(c0, s0 * dX, P), then
//                                P = fma(c1, s1 * dX, P)
//   c0, c1 the k-tiles' exact integer dot products, s (s0, s1) and m the
//   weight block's scales and min as DequantizeRow computes them, dX the
//   activation block's scale and sX the sum of its quants.
// Nothing in it depends on which other rows share a tile.
//
// Everything here but the mma itself compiles as plain C++, so the CPU test
// (tests/kernels/cuda_mma_q8_test.cc) runs these functions with the mma
// emulated from the layout above.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "core/host_device.h"
#include "kernels/cuda/weight_slices.h"
#include "kernels/quant_blocks.h"

namespace swiftlet::cuda_mma {

// Warps splitting a row's blocks (the kSplit of the order above).
inline constexpr int kSplit = 8;
// Weight rows and batch rows of one mma.
inline constexpr int kTileRows = 16, kTileCols = 8;

// CUDA's limit on a grid's y dimension, where the kernels put their tiles
// of batch rows.
inline constexpr int64_t kMaxGridY = 65535;

// A matmul over more batch rows than one grid holds (kMaxGridY blocks of
// `cols` rows each: about 2 M rows at 32 a block) is launched once per run
// of at most that many rows, each launch given its run's rows alone. The
// bits are the same as one launch's: no step of the order below depends on
// the other rows. Runs of n_rows rows: RowRuns(n_rows, cols); run i:
// rows [RowRunBegin(i, cols), min(n_rows, RowRunBegin(i + 1, cols))).
inline constexpr int64_t RowRunRows(int64_t cols) { return kMaxGridY * cols; }
inline constexpr int64_t RowRuns(int64_t n_rows, int64_t cols) {
  return (n_rows + RowRunRows(cols) - 1) / RowRunRows(cols);
}
inline constexpr int64_t RowRunBegin(int64_t i, int64_t cols) { return i * RowRunRows(cols); }

// The blocks of 32, [*begin, *end), that P_w of the order above takes in a
// row of nb of them. Contiguous runs rather than every kSplit-th block: a
// kernel whose warps split the outputs takes the runs one after another,
// each read whole (a stride of kSplit blocks would use a fraction of each
// 32-byte sector it reads).
SWIFTLET_HOST_DEVICE inline void SplitBlocks(int64_t nb, int w, int64_t* begin, int64_t* end) {
  const int64_t run = (nb + kSplit - 1) / kSplit;
  const int64_t first = run * w;
  *begin = first < nb ? first : nb;
  *end = first + run < nb ? first + run : nb;
}

SWIFTLET_HOST_DEVICE inline float FusedMulAdd(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

SWIFTLET_HOST_DEVICE inline float Mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);  // Never contracted into an FMA.
#else
  return a * b;
#endif
}

// Whether weights of `type` take the mma kernels (and so this order).
SWIFTLET_HOST_DEVICE inline bool MmaType(TensorType type) {
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0 || type == TensorType::kQ4_K ||
         type == TensorType::kQ5_K || type == TensorType::kQ6_K;
}

// One weight row's scales for a block of 32: the k-tiles' (the same twice
// where one scale covers the block) and the min (K quants with one).
struct RowScales {
  float s[2] = {0, 0};
  float m = 0;
};

// The A registers of lane t (= L % 4) for block of 32 `j` of a Slice block
// (j < kSubBlocks) of rows g and g + 8: a[kt][r] for k-tile kt (elements
// 16 kt .. 16 kt + 15) and row r (0: g, 1: g + 8), and the rows' scales.
template <typename Slice>
struct FragmentA {
  static constexpr bool kDefined = false;
};

// Q8_0 and Q4_0: a block is one block of 32, its quants loaded by
// Derived::LoadQuants.
template <typename Derived>
struct FragmentA32 {
  static constexpr bool kDefined = true;
  static constexpr int kSubBlocks = 1;
  static constexpr bool kTileScales = false, kMins = false;
  SWIFTLET_HOST_DEVICE static void Load(const uint8_t* const block[2], int, int t, uint32_t a[2][2], RowScales w[2]) {
    for (int r = 0; r < 2; ++r) {
      w[r].s[0] = w[r].s[1] = cuda_slices::HalfToFloat(static_cast<uint16_t>(cuda_slices::Load16(block[r])));
      Derived::LoadQuants(block[r], t, a, r);
    }
  }
};

template <>
struct FragmentA<cuda_slices::SliceQ8_0> : FragmentA32<FragmentA<cuda_slices::SliceQ8_0>> {
  SWIFTLET_HOST_DEVICE static void LoadQuants(const uint8_t* block, int t, uint32_t a[2][2], int r) {
    for (int kt = 0; kt < 2; ++kt) a[kt][r] = cuda_slices::Load2x16(block + 2 + 16 * kt + 4 * t);
  }
};

template <>
struct FragmentA<cuda_slices::SliceQ4_0> : FragmentA32<FragmentA<cuda_slices::SliceQ4_0>> {
  SWIFTLET_HOST_DEVICE static void LoadQuants(const uint8_t* block, int t, uint32_t a[2][2], int r) {
    const uint32_t q = cuda_slices::Load2x16(block + 2 + 4 * t);
    a[0][r] = cuda_slices::Sub4(q & 0x0F0F0F0Fu, 0x08080808u);
    a[1][r] = cuda_slices::Sub4(q >> 4 & 0x0F0F0F0Fu, 0x08080808u);
  }
};

// Q4_K and Q5_K: sub-block j (of 8) is the low (j even) or high nibbles of
// qs[32 (j / 2) ..], plus bit j of qh[0 .. 31] as bit 4 for Q5_K; its scale
// and min are d · sc_j and dmin · m_j.
template <typename Block, bool kFifthBit>
struct FragmentAK4 {
  static constexpr bool kDefined = true;
  static constexpr int kSubBlocks = kQK_K / 32;
  static constexpr bool kTileScales = false, kMins = true;
  SWIFTLET_HOST_DEVICE static void Load(const uint8_t* const block[2], int j, int t, uint32_t a[2][2],
                                        RowScales w[2]) {
    for (int r = 0; r < 2; ++r) {
      const Block* b = reinterpret_cast<const Block*>(block[r]);
      const float d = cuda_slices::HalfToFloat(static_cast<uint16_t>(cuda_slices::Load16(block[r])));
      const float dmin = cuda_slices::HalfToFloat(static_cast<uint16_t>(cuda_slices::Load16(block[r] + 2)));
      uint8_t sc, m;
      UnpackScaleMinK4(b->scales, j, &sc, &m);
      w[r].s[0] = w[r].s[1] = d * sc;
      w[r].m = dmin * m;
      for (int kt = 0; kt < 2; ++kt) {
        const int l = 16 * kt + 4 * t;
        uint32_t q = cuda_slices::Load2x16(b->qs + 32 * (j / 2) + l) >> (4 * (j % 2)) & 0x0F0F0F0Fu;
        if constexpr (kFifthBit) {
          q |= (cuda_slices::Load2x16(reinterpret_cast<const BlockQ5_K*>(b)->qh + l) >> j & cuda_slices::kOnes4) << 4;
        }
        a[kt][r] = q;
      }
    }
  }
};

template <>
struct FragmentA<cuda_slices::SliceQ4_K> : FragmentAK4<BlockQ4_K, false> {};
template <>
struct FragmentA<cuda_slices::SliceQ5_K> : FragmentAK4<BlockQ5_K, true> {};

// Q6_K: block of 32 j is quadrant g = j % 4 of half h = j / 4: element l
// (0..31) is the low (g < 2) or high nibble of ql[64 h + 32 (g % 2) + l]
// and bits 2g, 2g + 1 of qh[32 h + l], less 32; each k-tile is a sub-block
// of 16 with its own scale d · scales[2 j + kt].
template <>
struct FragmentA<cuda_slices::SliceQ6_K> {
  static constexpr bool kDefined = true;
  static constexpr int kSubBlocks = kQK_K / 32;
  static constexpr bool kTileScales = true, kMins = false;
  SWIFTLET_HOST_DEVICE static void Load(const uint8_t* const block[2], int j, int t, uint32_t a[2][2],
                                        RowScales w[2]) {
    const int h = j / 4, g = j % 4;
    for (int r = 0; r < 2; ++r) {
      const BlockQ6_K* b = reinterpret_cast<const BlockQ6_K*>(block[r]);
      const float d = cuda_slices::HalfToFloat(static_cast<uint16_t>(cuda_slices::Load16(block[r] + offsetof(BlockQ6_K, d))));
      for (int kt = 0; kt < 2; ++kt) {
        const int l = 16 * kt + 4 * t;
        const uint32_t low = cuda_slices::Load2x16(b->ql + 64 * h + 32 * (g % 2) + l) >> (g < 2 ? 0 : 4) & 0x0F0F0F0Fu;
        const uint32_t high = cuda_slices::Load2x16(b->qh + 32 * h + l) >> (2 * g) & 0x03030303u;
        a[kt][r] = cuda_slices::Sub4(low | high << 4, 0x20202020u);
        w[r].s[kt] = d * static_cast<float>(b->scales[2 * j + kt]);
      }
    }
  }
};

// Where block of 32 b of a weight row is: its Slice block, and which of
// that block's kSubBlocks it is (`sub`).
template <typename Slice>
SWIFTLET_HOST_DEVICE inline const uint8_t* BlockOfRow(const uint8_t* row, int64_t b, int* sub) {
  constexpr int kSub = FragmentA<Slice>::kSubBlocks;
  *sub = static_cast<int>(b % kSub);
  return row + static_cast<size_t>(b / kSub) * Slice::kBytes;
}

// The B register of lane t for k-tile kt of a block of 32 activation
// quants (those of the lane's batch row g).
SWIFTLET_HOST_DEVICE inline uint32_t FragmentB(const int8_t* quants, int t, int kt) {
  return cuda_slices::Load32(quants + 16 * kt + 4 * t);
}

// One block's steps of the order above for a lane's four outputs: c0, c1
// the k-tiles' mma results, w the rows' scales (g, g + 8), dx and sx the
// batch rows' (2t, 2t + 1) scales and quant sums.
template <typename Slice>
SWIFTLET_HOST_DEVICE inline void AccumulateBlock(const int32_t c0[4], const int32_t c1[4], const RowScales w[2],
                                                 const float dx[2], const float sx[2], float p[4]) {
  using F = FragmentA<Slice>;
  for (int r = 0; r < 2; ++r) {
    for (int col = 0; col < 2; ++col) {
      const int e = 2 * r + col;
      if constexpr (F::kTileScales) {
        p[e] = FusedMulAdd(static_cast<float>(c0[e]), Mul(w[r].s[0], dx[col]), p[e]);
        p[e] = FusedMulAdd(static_cast<float>(c1[e]), Mul(w[r].s[1], dx[col]), p[e]);
      } else {
        p[e] = FusedMulAdd(static_cast<float>(c0[e] + c1[e]), Mul(w[r].s[0], dx[col]), p[e]);
      }
      if constexpr (F::kMins) p[e] = FusedMulAdd(sx[col], Mul(-w[r].m, dx[col]), p[e]);
    }
  }
}

}  // namespace swiftlet::cuda_mma
