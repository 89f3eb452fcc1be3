// The CUDA kernels' weight decoding (kernels/cuda/weight_slices.h), run on
// the CPU: it is plain C++ there, so the GPU's block arithmetic and lane
// arithmetic are checked on every machine, GPU or not.
//
// References: DequantizeRow (the scalar specification, itself checked against
// ggml's layouts in dequantize_test) for every element's value, bit for bit;
// double-precision dot products for the matmul lanes.
#include "kernels/cuda/weight_slices.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/gaussian.h"
#include "kernels/quantize.h"

namespace swiftlet::cuda_slices {
namespace {

constexpr TensorType kTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                                 TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                 TensorType::kQ5_K, TensorType::kQ6_K};

// `n_out` rows of `n_in` random values stored as `type`.
std::vector<uint8_t> Rows(TensorType type, int64_t n_in, int64_t n_out, uint32_t seed, uint64_t* row_bytes) {
  EXPECT_TRUE(RowBytes(type, n_in, row_bytes));
  const std::vector<float> f = Gaussian(static_cast<size_t>(n_in * n_out), seed);
  std::vector<uint8_t> w(*row_bytes * n_out);
  for (int64_t o = 0; o < n_out; ++o) QuantizeRow(type, &f[o * n_in], &w[o * *row_bytes], n_in);
  return w;
}

TEST(CudaWeightSlicesTest, EveryTypeHasASliceAndOthersNone) {
  for (TensorType t : kTypes) {
    EXPECT_TRUE(WithSlice(t, [&](auto slice) {
      using S = decltype(slice);
      EXPECT_EQ(S::kBytes * BlockElems(t), static_cast<size_t>(S::kElems) * BlockBytes(t)) << NameOf(t);
      EXPECT_EQ(32 % S::kSlices, 0) << NameOf(t);
      EXPECT_EQ(S::kSlices * S::kWeights, S::kElems) << NameOf(t);
    })) << NameOf(t);
  }
  for (TensorType t : {TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1, TensorType::kQ8_K}) {
    EXPECT_FALSE(WithSlice(t, [](auto) {})) << NameOf(t);
  }
}

// Every element of a row is decoded by exactly one (block, slice, weight),
// to the bits DequantizeRow gives it.
TEST(CudaWeightSlicesTest, SlicesCoverEveryElementOnceWithTheReferenceValue) {
  const int64_t n_in = 1024, n_out = 6;
  for (TensorType t : kTypes) {
    SCOPED_TRACE(NameOf(t));
    uint64_t row_bytes = 0;
    const std::vector<uint8_t> w = Rows(t, n_in, n_out, 7, &row_bytes);
    WithSlice(t, [&](auto slice) {
      using S = decltype(slice);
      std::vector<float> want(n_in);
      for (int64_t o = 0; o < n_out; ++o) {
        const uint8_t* row = &w[o * row_bytes];
        DequantizeRow(t, row, want.data(), n_in);
        std::vector<int> seen(n_in, 0);
        for (int64_t b = 0; b < n_in / S::kElems; ++b) {
          for (int s = 0; s < S::kSlices; ++s) {
            float got[S::kWeights];
            S::Decode(row + b * S::kBytes, s, got);
            for (int k = 0; k < S::kWeights; ++k) {
              const int idx = S::Index(s, k);
              ASSERT_GE(idx, 0);
              ASSERT_LT(idx, S::kElems);
              const int64_t e = b * S::kElems + idx;
              ++seen[e];
              ASSERT_EQ(std::bit_cast<uint32_t>(got[k]), std::bit_cast<uint32_t>(want[e]))
                  << "row " << o << " element " << e << ": " << got[k] << " vs " << want[e];
            }
          }
        }
        for (int64_t e = 0; e < n_in; ++e) ASSERT_EQ(seen[e], 1) << "element " << e;
      }
    });
  }
}

// The 32 lanes' sums added as the kernel's butterfly (__shfl_xor by 16, 8,
// 4, 2, 1) adds them; lane 0's total, which the kernel stores.
float Butterfly(std::vector<float> lanes) {
  for (int offset = 16; offset > 0; offset /= 2) {
    std::vector<float> next(32);
    for (int l = 0; l < 32; ++l) next[l] = lanes[l] + lanes[l ^ offset];
    lanes = next;
  }
  return lanes[0];
}

// What the matmul kernel's warp computes for `rows` batch rows of x.
std::vector<float> WarpDot(TensorType t, const uint8_t* row, int64_t n_in, const float* x, int rows) {
  std::vector<std::vector<float>> lanes(rows, std::vector<float>(32));
  WithSlice(t, [&](auto slice) {
    using S = decltype(slice);
    for (int lane = 0; lane < 32; ++lane) {
      float sum[kRowsPerWarp] = {};
      AccumulateLane<S>(row, n_in / S::kElems, x, n_in, rows, lane, sum);
      for (int r = 0; r < rows; ++r) lanes[r][lane] = sum[r];
    }
  });
  std::vector<float> out(rows);
  for (int r = 0; r < rows; ++r) out[r] = Butterfly(lanes[r]);
  return out;
}

// The warp's sums against double-precision math on the dequantized row,
// for row lengths that leave the last pass partly empty; each batch row's
// result the same bits in a tile of 8, of 3 and alone.
TEST(CudaWeightSlicesTest, WarpDotMatchesTheMathAndDoesNotDependOnTheBatch) {
  for (TensorType t : kTypes) {
    for (int64_t n_in : {256, 768, 800, 4352}) {
      if (n_in % static_cast<int64_t>(BlockElems(t)) != 0) continue;  // 800: a last pass part empty.
      SCOPED_TRACE(std::string(NameOf(t)) + " n_in " + std::to_string(n_in));
      const int64_t n_out = 3;
      uint64_t row_bytes = 0;
      const std::vector<uint8_t> w = Rows(t, n_in, n_out, 11, &row_bytes);
      const std::vector<float> x = Gaussian(static_cast<size_t>(n_in * kRowsPerWarp), 12, 3);
      std::vector<float> wr(n_in);
      for (int64_t o = 0; o < n_out; ++o) {
        const uint8_t* row = &w[o * row_bytes];
        DequantizeRow(t, row, wr.data(), n_in);
        const std::vector<float> eight = WarpDot(t, row, n_in, x.data(), kRowsPerWarp);
        const std::vector<float> three = WarpDot(t, row, n_in, x.data() + 2 * n_in, 3);
        for (int r = 0; r < kRowsPerWarp; ++r) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < n_in; ++i) {
            want += double(wr[i]) * x[r * n_in + i];
            mag += std::fabs(double(wr[i]) * x[r * n_in + i]);
          }
          ASSERT_NEAR(eight[r], want, 1e-6 * mag) << "row " << o << " batch row " << r;
          const std::vector<float> alone = WarpDot(t, row, n_in, x.data() + r * n_in, 1);
          ASSERT_EQ(std::bit_cast<uint32_t>(alone[0]), std::bit_cast<uint32_t>(eight[r])) << "batch row " << r;
          if (r >= 2 && r < 5) {
            ASSERT_EQ(std::bit_cast<uint32_t>(three[r - 2]), std::bit_cast<uint32_t>(eight[r])) << "batch row " << r;
          }
        }
      }
    }
  }
}

// x rows quantized as the CPU quantizes activations (QuantizeRowQ8_0),
// split as the GPU keeps them: quants, and scales as floats.
struct QuantizedRows {
  std::vector<int8_t> q;
  std::vector<float> d;
  std::vector<float> values;  // What they stand for: q * d.
};
QuantizedRows QuantizeRows(const std::vector<float>& x, int64_t n_in) {
  QuantizedRows out;
  const int64_t blocks = static_cast<int64_t>(x.size()) / kActivationBlock;
  std::vector<BlockQ8_0> b(blocks);
  QuantizeRowQ8_0(x.data(), b.data(), static_cast<int64_t>(x.size()));
  for (const BlockQ8_0& block : b) {
    out.d.push_back(Fp16ToFp32(block.d));
    for (int j = 0; j < kActivationBlock; ++j) {
      out.q.push_back(block.qs[j]);
      out.values.push_back(static_cast<float>(block.qs[j]) * out.d.back());
    }
  }
  EXPECT_EQ(static_cast<int64_t>(out.d.size()), static_cast<int64_t>(x.size()) / kActivationBlock);
  (void)n_in;
  return out;
}

// What the integer matmul kernel's warp computes for `rows` batch rows of
// quantized x starting at row `first`.
std::vector<float> WarpDotQ8(TensorType t, const uint8_t* row, int64_t n_in, const QuantizedRows& x, int first,
                             int rows) {
  std::vector<std::vector<float>> lanes(rows, std::vector<float>(32));
  WithSlice(t, [&](auto slice) {
    using S = decltype(slice);
    if constexpr (S::kIntegerDot) {
      for (int lane = 0; lane < 32; ++lane) {
        float sum[kRowsPerWarp] = {};
        AccumulateLaneQ8<S>(row, n_in / S::kElems, x.q.data() + first * n_in,
                            x.d.data() + first * n_in / kActivationBlock, n_in, rows, lane, sum);
        for (int r = 0; r < rows; ++r) lanes[r][lane] = sum[r];
      }
    }
  });
  std::vector<float> out(rows);
  for (int r = 0; r < rows; ++r) out[r] = Butterfly(lanes[r]);
  return out;
}

// Quantized weights against quantized activations (integer dot products,
// dp4a on the GPU): the sums of what both stand for, in double, within
// 1e-6 of the sum of |terms|; each batch row's result the same bits alone.
// Scales of 3 and 1e-3 so the activation scales are not all alike.
TEST(CudaWeightSlicesTest, IntegerWarpDotMatchesTheMathOnQuantizedActivations) {
  for (TensorType t : kTypes) {
    bool integer = false;
    WithSlice(t, [&](auto slice) { integer = decltype(slice)::kIntegerDot; });
    if (!integer) continue;
    for (int64_t n_in : {256, 800, 4352}) {
      if (n_in % static_cast<int64_t>(BlockElems(t)) != 0) continue;
      SCOPED_TRACE(std::string(NameOf(t)) + " n_in " + std::to_string(n_in));
      const int64_t n_out = 3;
      uint64_t row_bytes = 0;
      const std::vector<uint8_t> w = Rows(t, n_in, n_out, 21, &row_bytes);
      std::vector<float> xf = Gaussian(static_cast<size_t>(n_in * kRowsPerWarp), 22, 3);
      for (int64_t i = 0; i < n_in; ++i) xf[i] *= 1e-3f;  // Row 0 small.
      const QuantizedRows x = QuantizeRows(xf, n_in);
      std::vector<float> wr(n_in);
      for (int64_t o = 0; o < n_out; ++o) {
        const uint8_t* row = &w[o * row_bytes];
        DequantizeRow(t, row, wr.data(), n_in);
        const std::vector<float> eight = WarpDotQ8(t, row, n_in, x, 0, kRowsPerWarp);
        for (int r = 0; r < kRowsPerWarp; ++r) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < n_in; ++i) {
            want += double(wr[i]) * x.values[r * n_in + i];
            mag += std::fabs(double(wr[i]) * x.values[r * n_in + i]);
          }
          ASSERT_GT(mag, 0);
          ASSERT_NEAR(eight[r], want, 1e-6 * mag) << "row " << o << " batch row " << r;
          const std::vector<float> alone = WarpDotQ8(t, row, n_in, x, r, 1);
          ASSERT_EQ(std::bit_cast<uint32_t>(alone[0]), std::bit_cast<uint32_t>(eight[r])) << "batch row " << r;
        }
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet::cuda_slices
