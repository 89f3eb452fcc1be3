// The packed-layout kernels against the scalar specification: every output
// of a backend MatMul on repacked weights, and of each ISA's kernel called
// directly, is bit-identical to VecDotScalar on the file's rows, for any
// number of activation rows and thread count.
#include "kernels/packed_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <random>
#include <tuple>
#include <vector>

#include "kernels/packed_matmul_variants.h"
#include "kernels/quantize.h"
#include "kernels/vec_dot.h"

namespace swiftlet {
namespace {

// `n_out` rows of `n_in` weights of `type`, drawn from a normal
// distribution of standard deviation `scale` and quantized. A block's
// quantization depends on its own values alone, so for the block types each
// row is a random choice of blocks from a pool quantized once per type and
// scale: the K-quant quantizers' search, not the code under test, was three
// quarters of these tests' time (45 s of the kernel tests under qemu). Each
// copied block gets a random byte in its middle, and each row's first
// block its index in the two bytes there, so no two rows are alike (a
// kernel that mixed rows up would hide behind copies): for every block
// type tested those are bytes of codes (kernels/quant_blocks.h), where any
// value is a valid block.
std::vector<uint8_t> QuantizedWeights(TensorType type, int64_t n_in, int64_t n_out, float scale,
                                      std::mt19937& rng) {
  uint64_t row_bytes = 0;
  EXPECT_TRUE(RowBytes(type, n_in, &row_bytes));
  std::vector<uint8_t> wq(row_bytes * n_out);
  const int64_t block = BlockElems(type);
  std::normal_distribution<float> dist(0, scale);
  if (block == 1) {
    std::vector<float> wf(n_in * n_out);
    for (float& v : wf) v = dist(rng);
    for (int64_t o = 0; o < n_out; ++o) QuantizeRow(type, wf.data() + o * n_in, wq.data() + o * row_bytes, n_in);
    return wq;
  }
  constexpr int64_t kPoolBlocks = 512;
  static std::map<std::pair<TensorType, float>, std::vector<uint8_t>> pools;
  std::vector<uint8_t>& pool = pools[{type, scale}];
  uint64_t block_bytes = 0;
  EXPECT_TRUE(RowBytes(type, block, &block_bytes));
  if (pool.empty()) {
    std::mt19937 pool_rng(static_cast<uint32_t>(type) * 31 + static_cast<uint32_t>(scale * 1000));
    std::vector<float> wf(kPoolBlocks * block);
    for (float& v : wf) v = dist(pool_rng);
    pool.resize(block_bytes * kPoolBlocks);
    QuantizeRow(type, wf.data(), pool.data(), kPoolBlocks * block);
  }
  for (uint64_t at = 0; at < wq.size(); at += block_bytes) {
    std::memcpy(wq.data() + at, pool.data() + (rng() % kPoolBlocks) * block_bytes, block_bytes);
    wq[at + block_bytes / 2] = static_cast<uint8_t>(rng());
  }
  for (int64_t o = 0; o < n_out; ++o) {  // The row's index in its first block: no two alike.
    wq[o * row_bytes + block_bytes / 2] = static_cast<uint8_t>(o);
    wq[o * row_bytes + block_bytes / 2 + 1] = static_cast<uint8_t>(o >> 8);
  }
  return wq;
}

class PackedMatMulTest : public ::testing::TestWithParam<TensorType> {};

TEST_P(PackedMatMulTest, MatchesScalarBitForBit) {
  const TensorType type = GetParam();
  if (ChosenKernelIsa() == KernelIsa::kScalar) GTEST_SKIP() << "no packed kernels without AVX2";
  std::mt19937 rng(static_cast<uint32_t>(type));
  for (int trial = 0; trial < 16; ++trial) {
    // Odd group counts and row counts reach every tile shape's remainder;
    // every other trial is one row (decode), which takes groups in fours.
    const int64_t n_in = BlockElems(type) == 1 ? 1 + rng() % 700
                                               : BlockElems(type) * (1 + rng() % (BlockElems(type) == 256 ? 6 : 24));
    // Some with rows past the last whole group of 16 (the tail), some over
    // several of the backend's 12-group tasks.
    const int64_t n_out = kPackRows * (1 + rng() % (trial % 4 == 3 ? 40 : 9)) + (trial % 3 == 0 ? rng() % 16 : 0);
    const int64_t n_rows = trial % 2 == 0 ? 1 : 2 + rng() % 10;
    const float scale = trial % 4 == 0 ? 1e3f : trial % 4 == 1 ? 1e-3f : 1.0f;
    std::normal_distribution<float> dist(0, scale);
    std::vector<float> x(n_in * n_rows);
    for (float& v : x) v = dist(rng);
    // Constant activations: every code at the extreme, so the per-block
    // activation sums reach their bounds (Q4_K and Q5_K add them in 16 bits).
    if (trial == 7) std::fill(x.begin(), x.end(), -scale);
    uint64_t row_bytes = 0;
    ASSERT_TRUE(RowBytes(type, n_in, &row_bytes));
    std::vector<uint8_t> wq = QuantizedWeights(type, n_in, n_out, scale, rng);
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
    std::vector<float> want(n_out * n_rows);
    for (int64_t t = 0; t < n_rows; ++t) {
      for (int64_t o = 0; o < n_out; ++o) {
        want[t * n_out + o] = VecDotScalar(type, wq.data() + o * row_bytes, act.data() + t * act_row, n_in);
      }
    }
    for (int threads : {1, 2}) {
      auto backend = MakeCpuBackend(threads);
      std::vector<float> y(n_out * n_rows, -1.0f);
      backend->MatMul(packed->view(), x.data(), n_rows, y.data());
      for (int64_t i = 0; i < n_out * n_rows; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want[i]))
            << NameOf(type) << " n_in " << n_in << " n_out " << n_out << " rows " << n_rows << " threads " << threads
            << " at t " << i / n_out << " o " << i % n_out << ": " << y[i] << " vs " << want[i];
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, PackedMatMulTest,
                         ::testing::Values(TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                           TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kF32,
                                           TensorType::kF16, TensorType::kBF16),
                         [](const auto& info) { return std::string(NameOf(info.param)); });

// Weights quantized from a normal distribution, with the extremes each type
// can hold: all-constant rows drive the activation sums to their bound,
// and Q8_0 gets raw -128 codes (foreign files may hold them).
class PackedKernelIsaTest : public ::testing::TestWithParam<std::tuple<KernelIsa, TensorType>> {};

TEST_P(PackedKernelIsaTest, EveryActivationRowCountMatchesScalarBitForBit) {
  const auto [isa, type] = GetParam();
  if (!CpuSupports(isa)) GTEST_SKIP() << KernelIsaName(isa) << " not on this CPU";
  const PackedKernelFn kernel = PackedKernelFor(isa, type);
  ASSERT_NE(kernel, nullptr);
  const TensorType act_type = ActivationTypeFor(type);
  std::mt19937 rng(static_cast<uint32_t>(type) * 7 + static_cast<uint32_t>(isa));
  for (int trial = 0; trial < 12; ++trial) {
    const int64_t n_in = BlockElems(type) == 1 ? 1 + rng() % 600
                                               : BlockElems(type) * (1 + rng() % (BlockElems(type) == 256 ? 5 : 20));
    // Up to 9 groups: every decode tile width and its remainders.
    const int64_t groups = 1 + rng() % 9;
    const int64_t n_out = kPackRows * groups;
    // 1..9 activation rows reach every batched tile shape (4, 3, 2, 1).
    const int64_t n_rows = 1 + trial % 9;
    const float scale = trial % 3 == 0 ? 1e3f : trial % 3 == 1 ? 1e-3f : 1.0f;
    std::normal_distribution<float> dist(0, scale);
    std::vector<float> x(n_in * n_rows);
    for (float& v : x) v = dist(rng);
    if (trial == 4) std::fill(x.begin(), x.end(), scale);
    if (trial == 5) std::fill(x.begin(), x.end(), -scale);
    uint64_t row_bytes = 0, act_row = 0;
    ASSERT_TRUE(RowBytes(type, n_in, &row_bytes));
    ASSERT_TRUE(RowBytes(act_type, n_in, &act_row));
    std::vector<uint8_t> wq = QuantizedWeights(type, n_in, n_out, scale, rng), act(act_row * n_rows);
    for (int64_t t = 0; t < n_rows; ++t) QuantizeRow(act_type, x.data() + t * n_in, act.data() + t * act_row, n_in);
    if (trial == 6 && type == TensorType::kQ8_0) {
      // -128 codes against activations all at -127: the extreme pairs of
      // the non-VNNI variants' signed products (2 x 128 x 127).
      for (size_t i = 0; i < wq.size(); ++i) {
        if (i % 34 >= 2 && i % 3 == 0) wq[i] = 0x80;
      }
      std::fill(x.begin(), x.end(), -scale);
      for (int64_t t = 0; t < n_rows; ++t) QuantizeRow(act_type, x.data() + t * n_in, act.data() + t * act_row, n_in);
    }
    const WeightView rows{type, n_in, n_out, wq.data(), row_bytes};
    std::unique_ptr<PackedWeight> packed = PackWeight(rows, isa, 1);
    ASSERT_NE(packed, nullptr);

    const int64_t sum_elems = PackedSumElems(type);
    const int64_t nb = n_in / BlockElems(act_type);
    const int sums_per_block = sum_elems > 0 ? static_cast<int>(BlockElems(act_type) / sum_elems) : 0;
    std::vector<float> scales(n_rows * nb);
    std::vector<int32_t> sums(sum_elems > 0 ? n_rows * nb * sums_per_block : 0);
    PackedActivations pa{act.data(), act_row, nullptr, nullptr, n_rows, nb, 0};
    if (sum_elems > 0) {  // Quantized activations: block scales and sums.
      PrepareActivationSums(act_type, act.data(), n_rows, n_in, sum_elems, scales.data(), sums.data());
      pa = {act.data(), act_row, scales.data(), sums.data(), n_rows, nb, sums_per_block};
    }
    const size_t group_bytes = nb * (PackedCodeBytes(type) + PackedScaleBytes(type));
    std::vector<float> y(n_out * n_rows, -1.0f);
    kernel(packed->view().data, groups, group_bytes, pa, y.data(), n_out);
    for (int64_t t = 0; t < n_rows; ++t) {
      for (int64_t o = 0; o < n_out; ++o) {
        const float want = VecDotScalar(type, wq.data() + o * row_bytes, act.data() + t * act_row, n_in);
        ASSERT_EQ(std::bit_cast<uint32_t>(y[t * n_out + o]), std::bit_cast<uint32_t>(want))
            << KernelIsaName(isa) << " " << NameOf(type) << " n_in " << n_in << " groups " << groups
            << " rows " << n_rows << " at t " << t << " o " << o << ": " << y[t * n_out + o] << " vs " << want;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllVariants, PackedKernelIsaTest,
    ::testing::Combine(::testing::Values(KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512,
                                         KernelIsa::kAvx512Vnni),
                       ::testing::Values(TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                         TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kF32,
                                         TensorType::kF16, TensorType::kBF16)),
    [](const auto& info) {
      return std::string(KernelIsaName(std::get<0>(info.param))) + "_" +
             std::string(NameOf(std::get<1>(info.param)));
    });

TEST(PackWeightTest, LeavesFewRowsOtherIsasAndOtherTypesInTheFileLayout) {
  std::vector<uint8_t> bytes(34 * 20, 0);
  const WeightView few_rows{TensorType::kQ8_0, 32, 15, bytes.data(), 34};
  EXPECT_EQ(PackWeight(few_rows, KernelIsa::kAvx512Vnni, 1), nullptr);
  const WeightView scalar_cpu{TensorType::kQ8_0, 32, 16, bytes.data(), 34};
  EXPECT_EQ(PackWeight(scalar_cpu, KernelIsa::kScalar, 1), nullptr);
  std::vector<uint8_t> q5(22 * 16, 0);
  const WeightView no_layout{TensorType::kQ5_0, 32, 16, q5.data(), 22};
  EXPECT_EQ(PackWeight(no_layout, KernelIsa::kAvx512Vnni, 1), nullptr);
}

}  // namespace
}  // namespace swiftlet
