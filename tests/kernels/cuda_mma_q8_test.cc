// The tensor-core matmul's lane arithmetic (kernels/cuda/mma_q8.h) on the
// CPU: each lane's fragments are loaded by the kernel's own functions, the
// mma is emulated from the PTX ISA's fragment layout (written out here
// again, independently of the loaders), and the result must be the bits of
// the reduction order computed straight from the blocks, and the math
// within float rounding.
#include "kernels/cuda/mma_q8.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/quantize.h"

namespace swiftlet::cuda_mma {
namespace {

int8_t Byte(uint32_t word, int i) { return static_cast<int8_t>(static_cast<uint8_t>(word >> (8 * i))); }

// mma.sync.m16n8k16.row.col.s32.s8.s8.s32 for a warp: c[L] += A B from
// the lanes' a[L][0..1] and b[L], as the fragment layout places them.
void EmulateMma(const uint32_t a[32][2], const uint32_t b[32], int32_t c[32][4]) {
  int A[kTileRows][16], B[16][kTileCols];
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int i = 0; i < 4; ++i) {
      A[g][4 * t + i] = Byte(a[lane][0], i);
      A[g + 8][4 * t + i] = Byte(a[lane][1], i);
      B[4 * t + i][g] = Byte(b[lane], i);
    }
  }
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int r = 0; r < 2; ++r) {
      for (int col = 0; col < 2; ++col) {
        int sum = 0;
        for (int k = 0; k < 16; ++k) sum += A[g + 8 * r][k] * B[k][2 * t + col];
        c[lane][2 * r + col] += sum;
      }
    }
  }
}

struct Activations {
  std::vector<int8_t> q;  // rows of n_in
  std::vector<float> d;   // rows of n_in / 32
};

Activations Quantize(const std::vector<float>& x) {
  Activations out;
  std::vector<BlockQ8_0> blocks(x.size() / 32);
  QuantizeRowQ8_0(x.data(), blocks.data(), static_cast<int64_t>(x.size()));
  for (const BlockQ8_0& b : blocks) {
    out.d.push_back(Fp16ToFp32(b.d));
    out.q.insert(out.q.end(), b.qs, b.qs + 32);
  }
  return out;
}

// What the kernel computes for weight rows o0.. o0 + 15 and batch rows
// t0 .. t0 + 7 (rows past the ends read as the kernel reads them: weights
// clamped to the last row, activations zero), as y[16][8].
template <typename Slice>
std::vector<float> WarpTiles(const std::vector<uint8_t>& w, size_t row_bytes, int64_t n_out, const Activations& x,
                             int64_t n_in, int64_t n_rows, int64_t o0, int64_t t0) {
  const int64_t nb = n_in / 32;
  float partial[kSplit][32][4] = {};
  for (int split = 0; split < kSplit; ++split) {
    for (int64_t b = split; b < nb; b += kSplit) {
      uint32_t a[2][32][2], bf[2][32];
      float dw[32][2], dx[32][2];
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const uint8_t* block[2];
        for (int r = 0; r < 2; ++r) {
          const int64_t o = std::min(o0 + g + 8 * r, n_out - 1);
          block[r] = w.data() + o * row_bytes + b * Slice::kBytes;
        }
        uint32_t fa[2][2];
        FragmentA<Slice>::Load(block, t, fa, dw[lane]);
        for (int kt = 0; kt < 2; ++kt) {
          a[kt][lane][0] = fa[kt][0];
          a[kt][lane][1] = fa[kt][1];
          const int64_t n = t0 + g;
          bf[kt][lane] = n < n_rows ? FragmentB(x.q.data() + n * n_in + b * 32, t, kt) : 0;
        }
        for (int col = 0; col < 2; ++col) {
          const int64_t n = t0 + 2 * t + col;
          dx[lane][col] = n < n_rows ? x.d[n * nb + b] : 0.0f;
        }
      }
      int32_t c[32][4] = {};
      EmulateMma(a[0], bf[0], c);
      EmulateMma(a[1], bf[1], c);
      for (int lane = 0; lane < 32; ++lane) AccumulateBlock(c[lane], dw[lane], dx[lane], partial[split][lane]);
    }
  }
  std::vector<float> y(kTileRows * kTileCols);
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4, t = lane % 4;
    for (int e = 0; e < 4; ++e) {
      float sum = partial[0][lane][e];
      for (int split = 1; split < kSplit; ++split) sum += partial[split][lane][e];
      y[(g + 8 * (e / 2)) * kTileCols + 2 * t + e % 2] = sum;
    }
  }
  return y;
}

// The reduction order of mma_q8.h computed straight from the blocks.
template <typename Slice>
float Spec(const uint8_t* row, const Activations& x, int64_t n_in, int64_t r) {
  const int64_t nb = n_in / 32;
  float partial[kSplit] = {};
  for (int split = 0; split < kSplit; ++split) {
    for (int64_t b = split; b < nb; b += kSplit) {
      const uint8_t* block = row + b * Slice::kBytes;
      const float dw = Fp16ToFp32(static_cast<uint16_t>(block[0] | block[1] << 8));
      int isum = 0;
      for (int j = 0; j < 32; ++j) {
        int wq;
        if constexpr (std::is_same_v<Slice, cuda_slices::SliceQ8_0>) {
          wq = static_cast<int8_t>(block[2 + j]);
        } else {
          wq = (j < 16 ? (block[2 + j] & 0xF) : (block[2 + j - 16] >> 4)) - 8;
        }
        isum += wq * x.q[r * n_in + b * 32 + j];
      }
      partial[split] = std::fma(static_cast<float>(isum), dw * x.d[r * nb + b], partial[split]);
    }
  }
  float sum = partial[0];
  for (int split = 1; split < kSplit; ++split) sum += partial[split];
  return sum;
}

template <typename Slice>
void CheckType(TensorType type) {
  // 20 weight rows (a second tile part past the end), 11 batch rows (a
  // second n-tile part empty); 37 blocks a row: kSplit does not divide it.
  const int64_t n_in = 32 * 37, n_out = 20, n_rows = 11;
  uint64_t row_bytes = 0;
  ASSERT_TRUE(RowBytes(type, n_in, &row_bytes));
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0, 1);
  std::vector<float> wf(n_in * n_out), xf(n_in * n_rows);
  for (float& v : wf) v = normal(rng);
  for (float& v : xf) v = normal(rng) * 2;
  std::vector<uint8_t> w(row_bytes * n_out);
  for (int64_t o = 0; o < n_out; ++o) QuantizeRow(type, &wf[o * n_in], &w[o * row_bytes], n_in);
  const Activations x = Quantize(xf);
  std::vector<float> wr(n_in);
  for (int64_t o0 = 0; o0 < n_out; o0 += kTileRows) {
    for (int64_t t0 = 0; t0 < n_rows; t0 += kTileCols) {
      const std::vector<float> y = WarpTiles<Slice>(w, row_bytes, n_out, x, n_in, n_rows, o0, t0);
      for (int i = 0; i < kTileRows; ++i) {
        for (int j = 0; j < kTileCols; ++j) {
          const int64_t o = o0 + i, r = t0 + j;
          if (o >= n_out || r >= n_rows) continue;
          const float got = y[i * kTileCols + j];
          const float spec = Spec<Slice>(&w[o * row_bytes], x, n_in, r);
          ASSERT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(spec)) << "row " << o << " batch " << r;
          DequantizeRow(type, &w[o * row_bytes], wr.data(), n_in);
          double want = 0, mag = 0;
          for (int64_t e = 0; e < n_in; ++e) {
            const double xv = double(x.q[r * n_in + e]) * x.d[r * (n_in / 32) + e / 32];
            want += wr[e] * xv;
            mag += std::fabs(wr[e] * xv);
          }
          ASSERT_NEAR(got, want, 1e-6 * mag) << "row " << o << " batch " << r;
        }
      }
    }
  }
}

TEST(CudaMmaQ8Test, Q8_0TilesGiveTheOrdersBitsAndTheMath) { CheckType<cuda_slices::SliceQ8_0>(TensorType::kQ8_0); }
TEST(CudaMmaQ8Test, Q4_0TilesGiveTheOrdersBitsAndTheMath) { CheckType<cuda_slices::SliceQ4_0>(TensorType::kQ4_0); }

TEST(CudaMmaQ8Test, OnlyQ8_0AndQ4_0TakeTheTensorCores) {
  EXPECT_TRUE(MmaType(TensorType::kQ8_0));
  EXPECT_TRUE(MmaType(TensorType::kQ4_0));
  for (TensorType t : {TensorType::kF16, TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kQ5_0}) {
    EXPECT_FALSE(MmaType(t)) << NameOf(t);
  }
}

}  // namespace
}  // namespace swiftlet::cuda_mma
