// The packed-layout kernels against the scalar specification: every output
// of a backend MatMul on repacked weights is bit-identical to VecDotScalar on
// the file's rows, for any number of activation rows and thread count.
#include "kernels/packed_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <random>
#include <vector>

#include "kernels/quantize.h"
#include "kernels/vec_dot.h"

namespace swiftlet {
namespace {

class PackedMatMulTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(PackedMatMulTest, MatchesScalarBitForBit) {
  const TensorType type = GetParam();
  if (ChosenKernelIsa() != KernelIsa::kAvx512Vnni) {
    GTEST_SKIP() << "packed kernels need AVX-512 VNNI; this CPU runs "
                 << KernelIsaName(ChosenKernelIsa());
  }
  std::mt19937 rng(static_cast<uint32_t>(type));
  for (int trial = 0; trial < 16; ++trial) {
    // Odd group counts and row counts reach every tile shape's remainder;
    // every other trial is one row (decode), which takes groups in fours.
    const int64_t n_in = BlockElems(type) * (1 + rng() % (BlockElems(type) == 256 ? 6 : 24));
    // Some with rows past the last whole group of 16 (the tail), some over
    // several of the backend's 12-group tasks.
    const int64_t n_out = kPackRows * (1 + rng() % (trial % 4 == 3 ? 40 : 9)) + (trial % 3 == 0 ? rng() % 16 : 0);
    const int64_t n_rows = trial % 2 == 0 ? 1 : 2 + rng() % 10;
    const float scale = trial % 4 == 0 ? 1e3f : trial % 4 == 1 ? 1e-3f : 1.0f;
    std::normal_distribution<float> dist(0, scale);
    std::vector<float> wf(n_in * n_out), x(n_in * n_rows);
    for (float& v : wf) v = dist(rng);
    for (float& v : x) v = dist(rng);
    // Constant activations: every code at the extreme, so the per-block
    // activation sums reach their bounds (Q4_K and Q5_K add them in 16 bits).
    if (trial == 7) std::fill(x.begin(), x.end(), -scale);
    uint64_t row_bytes = 0;
    ASSERT_TRUE(RowBytes(type, n_in, &row_bytes));
    std::vector<uint8_t> wq(row_bytes * n_out);
    for (int64_t o = 0; o < n_out; ++o) {
      QuantizeRow(type, wf.data() + o * n_in, wq.data() + o * row_bytes, n_in);
    }
    if (trial == 5 && type == TensorType::kQ8_0) {
      // Foreign files may hold -128 in Q8_0 codes: still exact.
      for (size_t i = 0; i < wq.size(); ++i) {
        if (i % 34 >= 2 && i % 5 == 0) wq[i] = 0x80;
      }
    }
    const WeightView rows{type, n_in, n_out, wq.data(), row_bytes};
    std::unique_ptr<PackedWeight> packed = PackWeight(rows, ChosenKernelIsa(), 2);
    ASSERT_NE(packed, nullptr);
    ASSERT_EQ(packed->view().layout, WeightLayout::kRows16);

    const TensorType act_type = ActivationTypeFor(type);
    uint64_t act_row = 0;
    ASSERT_TRUE(RowBytes(act_type, n_in, &act_row));
    std::vector<uint8_t> act(n_rows * act_row);
    for (int64_t t = 0; t < n_rows; ++t) QuantizeRow(act_type, x.data() + t * n_in, act.data() + t * act_row, n_in);
    for (int threads : {1, 2}) {
      auto backend = MakeCpuBackend(threads);
      std::vector<float> y(n_out * n_rows, -1.0f);
      backend->MatMul(packed->view(), x.data(), n_rows, y.data());
      for (int64_t t = 0; t < n_rows; ++t) {
        for (int64_t o = 0; o < n_out; ++o) {
          const float want = VecDotScalar(type, wq.data() + o * row_bytes,
                                          act.data() + t * act_row, n_in);
          ASSERT_EQ(std::bit_cast<uint32_t>(y[t * n_out + o]), std::bit_cast<uint32_t>(want))
              << NameOf(type) << " n_in " << n_in << " n_out " << n_out << " rows " << n_rows
              << " at t " << t << " o " << o << ": " << y[t * n_out + o] << " vs " << want;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedMatMulTest,
                         ::testing::Values(TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                           TensorType::kQ5_K, TensorType::kQ6_K),
                         [](const auto& info) { return std::string(NameOf(info.param)); });

TEST(PackWeightTest, LeavesFewRowsOtherIsasAndOtherTypesInTheFileLayout) {
  std::vector<uint8_t> bytes(34 * 20, 0);
  const WeightView few_rows{TensorType::kQ8_0, 32, 15, bytes.data(), 34};
  EXPECT_EQ(PackWeight(few_rows, KernelIsa::kAvx512Vnni, 1), nullptr);
  const WeightView scalar_cpu{TensorType::kQ8_0, 32, 16, bytes.data(), 34};
  EXPECT_EQ(PackWeight(scalar_cpu, KernelIsa::kAvx2, 1), nullptr);
  std::vector<uint8_t> q5(22 * 16, 0);
  const WeightView no_layout{TensorType::kQ5_0, 32, 16, q5.data(), 22};
  EXPECT_EQ(PackWeight(no_layout, KernelIsa::kAvx512Vnni, 1), nullptr);
}

}  // namespace
}  // namespace swiftlet
