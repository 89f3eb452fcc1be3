// Q8_0 and Q4_0 matmuls on the tensor cores: the warp-level integer
// multiply-accumulate mma.sync.m16n8k16.row.col.s32.s8.s8.s32 (sm_80 and
// later) takes 16 weight rows and 8 activation rows (batch rows) and adds
// their exact 16-element integer dot products; two of them cover one block
// of 32 of both, whose quants line up (activations are quantized in blocks
// of 32 too, weight_slices.h's kActivationBlock).
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
//
// The reduction order (what makes results batch invariant, and the same
// bits in every kernel that keeps it): for output row o and batch row r,
//   y = P_0 + P_1 + ... + P_{kSplit-1}, left to right, where
//   P_w = fma(isum_b, dW_b * dX_b, P_w) over the blocks b = w, w + kSplit, ...
//   in order, isum_b the exact integer dot product of block b, dW_b and dX_b
//   the weight's and the activation's scales.
// Nothing in it depends on which other rows share a tile.
//
// Everything here but the mma itself compiles as plain C++, so the CPU test
// (tests/kernels/cuda_mma_q8_test.cc) runs these functions with the mma
// emulated from the layout above.
#pragma once

#include <cmath>
#include <cstdint>

#include "core/host_device.h"
#include "kernels/cuda/weight_slices.h"

namespace swiftlet::cuda_mma {

// Warps splitting a row's blocks (the kSplit of the order above).
inline constexpr int kSplit = 8;
// Weight rows and batch rows of one mma.
inline constexpr int kTileRows = 16, kTileCols = 8;

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
  return type == TensorType::kQ8_0 || type == TensorType::kQ4_0;
}

// The A registers of lane t (= L % 4) for one block of rows g and g + 8:
// a[kt][r] for k-tile kt (elements 16 kt .. 16 kt + 15) and row r (0: g,
// 1: g + 8), and each row's scale d[r].
template <typename Slice>
struct FragmentA;

template <>
struct FragmentA<cuda_slices::SliceQ8_0> {
  SWIFTLET_HOST_DEVICE static void Load(const uint8_t* const block[2], int t, uint32_t a[2][2], float d[2]) {
    for (int r = 0; r < 2; ++r) {
      d[r] = cuda_slices::HalfToFloat(static_cast<uint16_t>(cuda_slices::Load16(block[r])));
      for (int kt = 0; kt < 2; ++kt) a[kt][r] = cuda_slices::Load2x16(block[r] + 2 + 16 * kt + 4 * t);
    }
  }
};

template <>
struct FragmentA<cuda_slices::SliceQ4_0> {
  SWIFTLET_HOST_DEVICE static void Load(const uint8_t* const block[2], int t, uint32_t a[2][2], float d[2]) {
    for (int r = 0; r < 2; ++r) {
      d[r] = cuda_slices::HalfToFloat(static_cast<uint16_t>(cuda_slices::Load16(block[r])));
      const uint32_t q = cuda_slices::Load2x16(block[r] + 2 + 4 * t);
      a[0][r] = cuda_slices::Sub4(q & 0x0F0F0F0Fu, 0x08080808u);
      a[1][r] = cuda_slices::Sub4(q >> 4 & 0x0F0F0F0Fu, 0x08080808u);
    }
  }
};

// The B register of lane t for k-tile kt of a block of 32 activation
// quants (those of the lane's batch row g).
SWIFTLET_HOST_DEVICE inline uint32_t FragmentB(const int8_t* quants, int t, int kt) {
  return cuda_slices::Load32(quants + 16 * kt + 4 * t);
}

// One block's step of the order above for a lane's four outputs: c from
// the mma, dw the rows' scales (g, g + 8), dx the batch rows' (2t, 2t + 1).
SWIFTLET_HOST_DEVICE inline void AccumulateBlock(const int32_t c[4], const float dw[2], const float dx[2], float p[4]) {
  for (int r = 0; r < 2; ++r) {
    for (int col = 0; col < 2; ++col) {
      p[2 * r + col] = FusedMulAdd(static_cast<float>(c[2 * r + col]), Mul(dw[r], dx[col]), p[2 * r + col]);
    }
  }
}

}  // namespace swiftlet::cuda_mma
