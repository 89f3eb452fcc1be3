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
  std::vector<int8_t> q;     // rows of n_in
  std::vector<float> d, s;   // rows of n_in / 32: scales, sums of the quants
};

Activations Quantize(const std::vector<float>& x) {
  Activations out;
  std::vector<BlockQ8_0> blocks(x.size() / 32);
  QuantizeRowQ8_0(x.data(), blocks.data(), static_cast<int64_t>(x.size()));
  for (const BlockQ8_0& b : blocks) {
    out.d.push_back(Fp16ToFp32(b.d));
    out.q.insert(out.q.end(), b.qs, b.qs + 32);
    int sum = 0;
    for (int8_t v : b.qs) sum += v;
    out.s.push_back(static_cast<float>(sum));
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
    int64_t begin, end;
    SplitBlocks(nb, split, &begin, &end);
    for (int64_t b = begin; b < end; ++b) {
      uint32_t a[2][32][2], bf[2][32];
      RowScales ws[32][2];
      float dx[32][2], sx[32][2];
      for (int lane = 0; lane < 32; ++lane) {
        const int g = lane / 4, t = lane % 4;
        const uint8_t* block[2];
        int sub = 0;
        for (int r = 0; r < 2; ++r) {
          const int64_t o = std::min(o0 + g + 8 * r, n_out - 1);
          block[r] = BlockOfRow<Slice>(w.data() + o * row_bytes, b, &sub);
        }
        uint32_t fa[2][2];
        FragmentA<Slice>::Load(block, sub, t, fa, ws[lane]);
        for (int kt = 0; kt < 2; ++kt) {
          a[kt][lane][0] = fa[kt][0];
          a[kt][lane][1] = fa[kt][1];
          const int64_t n = t0 + g;
          bf[kt][lane] = n < n_rows ? FragmentB(x.q.data() + n * n_in + b * 32, t, kt) : 0;
        }
        for (int col = 0; col < 2; ++col) {
          const int64_t n = t0 + 2 * t + col;
          dx[lane][col] = n < n_rows ? x.d[n * nb + b] : 0.0f;
          sx[lane][col] = n < n_rows ? x.s[n * nb + b] : 0.0f;
        }
      }
      int32_t c0[32][4] = {}, c1[32][4] = {};
      EmulateMma(a[0], bf[0], c0);
      EmulateMma(a[1], bf[1], c1);
      for (int lane = 0; lane < 32; ++lane) {
        AccumulateBlock<Slice>(c0[lane], c1[lane], ws[lane], dx[lane], sx[lane], partial[split][lane]);
      }
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

// Weight block of 32 b of a row, straight from the formats
// (quant_blocks.h): its quants and the scales and min of mma_q8.h's order
// (s[kt] for k-tile kt; m = 0 where there is none).
struct WeightBlock {
  int q[32];
  float s[2];
  float m = 0;
};

WeightBlock BlockOf(TensorType type, const uint8_t* row, int64_t b) {
  WeightBlock out{};
  auto half = [](const uint8_t* p) { return Fp16ToFp32(static_cast<uint16_t>(p[0] | p[1] << 8)); };
  switch (type) {
    case TensorType::kQ8_0:
    case TensorType::kQ4_0: {
      const uint8_t* block = row + b * (type == TensorType::kQ8_0 ? 34 : 18);
      out.s[0] = out.s[1] = half(block);
      for (int j = 0; j < 32; ++j) {
        out.q[j] = type == TensorType::kQ8_0 ? static_cast<int8_t>(block[2 + j])
                                             : (j < 16 ? block[2 + j] & 0xF : block[2 + j - 16] >> 4) - 8;
      }
      break;
    }
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: {
      const bool q5 = type == TensorType::kQ5_K;
      const uint8_t* block = row + b / 8 * (q5 ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K));
      const int sub = static_cast<int>(b % 8);
      uint8_t sc, m;
      UnpackScaleMinK4(block + 4, sub, &sc, &m);
      out.s[0] = out.s[1] = half(block) * sc;
      out.m = half(block + 2) * m;
      const uint8_t* qs = block + 16 + (q5 ? 32 : 0);
      for (int l = 0; l < 32; ++l) {
        out.q[l] = qs[32 * (sub / 2) + l] >> (4 * (sub % 2)) & 0xF;
        if (q5) out.q[l] |= (block[16 + l] >> sub & 1) << 4;
      }
      break;
    }
    case TensorType::kQ6_K: {
      const BlockQ6_K* block = reinterpret_cast<const BlockQ6_K*>(row + b / 8 * sizeof(BlockQ6_K));
      const float d = Fp16ToFp32(block->d);
      for (int l = 0; l < 32; ++l) {
        const int e = static_cast<int>(b % 8) * 32 + l;  // Element of the block of 256.
        const int h = e / 128, quadrant = e % 128 / 32, i = e % 32;
        const int low = block->ql[64 * h + 32 * (quadrant % 2) + i] >> (quadrant < 2 ? 0 : 4) & 0xF;
        const int high = block->qh[32 * h + i] >> (2 * quadrant) & 3;
        out.q[l] = (low | high << 4) - 32;
      }
      for (int kt = 0; kt < 2; ++kt) out.s[kt] = d * static_cast<float>(block->scales[(b % 8) * 2 + kt]);
      break;
    }
    default:
      ADD_FAILURE() << NameOf(type);
  }
  return out;
}

// The reduction order of mma_q8.h computed straight from the blocks.
float Spec(TensorType type, const uint8_t* row, const Activations& x, int64_t n_in, int64_t r) {
  const int64_t nb = n_in / 32;
  // Eight runs of ceil(nb / 8) blocks, the last ones shorter or empty.
  const int64_t run = (nb + 7) / 8;
  float partial[kSplit] = {};
  for (int split = 0; split < kSplit; ++split) {
    for (int64_t b = split * run; b < std::min(nb, (split + 1) * run); ++b) {
      const WeightBlock wb = BlockOf(type, row, b);
      int isum[2] = {0, 0};
      for (int j = 0; j < 32; ++j) isum[j / 16] += wb.q[j] * x.q[r * n_in + b * 32 + j];
      const float dx = x.d[r * nb + b];
      float& p = partial[split];
      if (type == TensorType::kQ6_K) {
        p = std::fma(static_cast<float>(isum[0]), wb.s[0] * dx, p);
        p = std::fma(static_cast<float>(isum[1]), wb.s[1] * dx, p);
      } else {
        p = std::fma(static_cast<float>(isum[0] + isum[1]), wb.s[0] * dx, p);
      }
      if (type == TensorType::kQ4_K || type == TensorType::kQ5_K) p = std::fma(x.s[r * nb + b], -wb.m * dx, p);
    }
  }
  float sum = partial[0];
  for (int split = 1; split < kSplit; ++split) sum += partial[split];
  return sum;
}

// n_blocks: blocks of 32 a row (0: the default below).
template <typename Slice>
void CheckType(TensorType type, int64_t n_blocks = 0) {
  // 20 weight rows (a second tile part past the end), 11 batch rows (a
  // second n-tile part empty); 37 blocks of 32 a row, which kSplit does not
  // divide: runs of 5, the last of 2 (K quants: 40, five blocks of 256,
  // runs across their sub-blocks).
  const bool k_quant = type == TensorType::kQ4_K || type == TensorType::kQ5_K || type == TensorType::kQ6_K;
  if (n_blocks == 0) n_blocks = k_quant ? 40 : 37;
  const int64_t n_in = 32 * n_blocks, n_out = 20, n_rows = 11;
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
          const float spec = Spec(type, &w[o * row_bytes], x, n_in, r);
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
TEST(CudaMmaQ8Test, Q4_KTilesGiveTheOrdersBitsAndTheMath) { CheckType<cuda_slices::SliceQ4_K>(TensorType::kQ4_K); }
TEST(CudaMmaQ8Test, Q5_KTilesGiveTheOrdersBitsAndTheMath) { CheckType<cuda_slices::SliceQ5_K>(TensorType::kQ5_K); }
TEST(CudaMmaQ8Test, Q6_KTilesGiveTheOrdersBitsAndTheMath) { CheckType<cuda_slices::SliceQ6_K>(TensorType::kQ6_K); }

// Rows of fewer blocks than kSplit, or a few more: runs of one block and
// empty runs, or a short last run followed by empty ones (9: 2, 2, 2, 2, 1,
// 0, 0, 0).
TEST(CudaMmaQ8Test, ShortRowsAndEmptyRunsGiveTheOrdersBits) {
  for (int64_t nb : {1, 3, 9, 17}) {
    SCOPED_TRACE("blocks " + std::to_string(nb));
    CheckType<cuda_slices::SliceQ8_0>(TensorType::kQ8_0, nb);
    CheckType<cuda_slices::SliceQ4_0>(TensorType::kQ4_0, nb);
  }
  CheckType<cuda_slices::SliceQ4_K>(TensorType::kQ4_K, 8);
  CheckType<cuda_slices::SliceQ6_K>(TensorType::kQ6_K, 16);
}

// SplitBlocks' runs, for every row length up to 2,000 blocks: in order,
// each block once, the first ones of ceil(nb / kSplit) blocks and the rest
// shorter or empty.
TEST(CudaMmaQ8Test, TheRunsCoverARowInOrder) {
  for (int64_t nb = 0; nb <= 2000; ++nb) {
    const int64_t run = (nb + kSplit - 1) / kSplit;
    int64_t next = 0;
    for (int w = 0; w < kSplit; ++w) {
      int64_t begin = -1, end = -1;
      SplitBlocks(nb, w, &begin, &end);
      ASSERT_EQ(begin, next) << nb << " blocks, run " << w;
      ASSERT_LE(begin, end) << nb << " blocks, run " << w;
      ASSERT_LE(end - begin, run) << nb << " blocks, run " << w;
      if (end < nb) {
        ASSERT_EQ(end - begin, run) << nb << " blocks, run " << w;
      }
      next = end;
    }
    ASSERT_EQ(next, nb);
  }
}

// RowRuns: a matmul's batch rows split into launches whose grids CUDA
// takes (at most kMaxGridY tiles of `cols` rows each), in order, each row
// once, every run full but the last. The row counts go past the first
// limit (2,097,120 rows at 32 a tile), where one launch was refused.
TEST(CudaMmaQ8Test, RowRunsCoverEveryRowInGridsCudaTakes) {
  for (int64_t cols : {int64_t{8}, int64_t{32}, int64_t{128}}) {
    const int64_t most = kMaxGridY * cols;
    for (int64_t n_rows : {int64_t{0}, int64_t{1}, cols - 1, cols, cols + 1, most - 1, most, most + 1,
                           2 * most + 5, 3 * most}) {
      int64_t next = 0;
      const int64_t runs = RowRuns(n_rows, cols);
      for (int64_t i = 0; i < runs; ++i) {
        const int64_t begin = RowRunBegin(i, cols), end = std::min(n_rows, RowRunBegin(i + 1, cols));
        ASSERT_EQ(begin, next) << n_rows << " rows of " << cols << ", run " << i;
        ASSERT_LT(begin, end) << n_rows << " rows of " << cols << ", run " << i;
        ASSERT_LE((end - begin + cols - 1) / cols, kMaxGridY) << n_rows << " rows of " << cols << ", run " << i;
        if (i + 1 < runs) {
          ASSERT_EQ(end - begin, most) << n_rows << " rows of " << cols << ", run " << i;
        }
        next = end;
      }
      EXPECT_EQ(next, n_rows) << n_rows << " rows of " << cols;
      EXPECT_EQ(runs, (n_rows + most - 1) / most) << n_rows << " rows of " << cols;
    }
  }
}

// The types with fragments are the types MmaType sends to the tensor cores.
TEST(CudaMmaQ8Test, TheTensorCoreTypesAreTheOnesWithFragments) {
  bool any = false;
  for (int t = 0; t <= static_cast<int>(TensorType::kBF16); ++t) {
    const TensorType type = static_cast<TensorType>(t);
    bool fragment = false;
    cuda_slices::WithSlice(type, [&](auto slice) { fragment = FragmentA<decltype(slice)>::kDefined; });
    EXPECT_EQ(MmaType(type), fragment) << NameOf(type);
    any = any || fragment;
  }
  EXPECT_TRUE(any);
  EXPECT_FALSE(MmaType(TensorType::kF16));
  EXPECT_FALSE(MmaType(TensorType::kQ5_0));
}

}  // namespace
}  // namespace swiftlet::cuda_mma
