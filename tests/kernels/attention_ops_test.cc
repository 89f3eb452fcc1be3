// The attention ops of every variant this CPU runs against the scalar
// twin (bit for bit), and the twin against the order it documents.
#include "kernels/attention_ops.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/quantize.h"
#include "simd_twin_isas.h"

namespace swiftlet {
namespace {

TEST(AttentionOpsTest, ScalarDotFoldsSixteenLanesInTheDocumentedOrder) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0, 1);
  for (int64_t n : {1, 15, 16, 17, 64, 100, 128}) {
    std::vector<float> q(n), k(n);
    for (int64_t i = 0; i < n; ++i) q[i] = dist(rng), k[i] = dist(rng);
    // Written out independently: lane sums, then the fold 8, 4, 2, 1.
    float lanes[16] = {};
    for (int64_t i = 0; i < n; ++i) lanes[i % 16] = lanes[i % 16] + q[i] * k[i];
    float f8[8], f4[4], f2[2];
    for (int l = 0; l < 8; ++l) f8[l] = lanes[l] + lanes[l + 8];
    for (int l = 0; l < 4; ++l) f4[l] = f8[l] + f8[l + 4];
    for (int l = 0; l < 2; ++l) f2[l] = f4[l] + f4[l + 2];
    const float want = f2[0] + f2[1];
    EXPECT_EQ(std::bit_cast<uint32_t>(AttentionOpsScalar().dot_f32(q.data(), k.data(), n)),
              std::bit_cast<uint32_t>(want))
        << "n " << n;
    double exact = 0;
    for (int64_t i = 0; i < n; ++i) exact += static_cast<double>(q[i]) * k[i];
    EXPECT_NEAR(want, exact, 1e-4 * (1 + std::abs(exact)));
  }
}

TEST(AttentionOpsTest, EveryVariantMatchesTheScalarTwinBitForBit) {
  const AttentionOps& scalar = AttentionOpsScalar();
  std::mt19937 rng(5);
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    for (int64_t dim : {16, 64, 80, 128, 256}) {
      const AttentionOps& ops = AttentionOpsFor(isa, dim);
      for (int trial = 0; trial < 20; ++trial) {
        std::normal_distribution<float> dist(0, trial % 3 == 0 ? 100.0f : 1.0f);
        std::vector<float> q(dim), k(dim), acc(dim), acc2;
        std::vector<uint16_t> kh(dim);
        for (int64_t i = 0; i < dim; ++i) {
          q[i] = dist(rng), k[i] = dist(rng), acc[i] = dist(rng);
          kh[i] = Fp32ToFp16(k[i]);
        }
        EXPECT_EQ(std::bit_cast<uint32_t>(ops.dot_f32(q.data(), k.data(), dim)),
                  std::bit_cast<uint32_t>(scalar.dot_f32(q.data(), k.data(), dim)));
        EXPECT_EQ(std::bit_cast<uint32_t>(ops.dot_f16(q.data(), kh.data(), dim)),
                  std::bit_cast<uint32_t>(scalar.dot_f16(q.data(), kh.data(), dim)));
        const float p = std::abs(dist(rng));
        acc2 = acc;
        ops.axpy_f16(acc.data(), p, kh.data(), dim);
        scalar.axpy_f16(acc2.data(), p, kh.data(), dim);
        ops.axpy_f32(acc.data(), p, k.data(), dim);
        scalar.axpy_f32(acc2.data(), p, k.data(), dim);
        for (int64_t i = 0; i < dim; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(acc[i]), std::bit_cast<uint32_t>(acc2[i]))
              << KernelIsaName(isa) << " dim " << dim << " element " << i;
        }
      }
    }
  }
}

TEST(AttentionOpsTest, Q8RowsReadBackAsTheirDequantizedValues) {
  std::mt19937 rng(9);
  std::normal_distribution<float> dist(0, 2);
  const AttentionOps& scalar = AttentionOpsScalar();
  for (int64_t dim : {32, 64, 128}) {
    std::vector<float> q(dim), x(dim), deq(dim), acc(dim, 0.5f), want(dim, 0.5f);
    for (int64_t i = 0; i < dim; ++i) q[i] = dist(rng), x[i] = dist(rng);
    std::vector<BlockQ8_0> row(dim / 32);
    QuantizeRowQ8_0(x.data(), row.data(), dim);
    DequantizeRow(TensorType::kQ8_0, reinterpret_cast<const uint8_t*>(row.data()), deq.data(), dim);
    // The dequantized row through the F32 op is the specification.
    EXPECT_EQ(std::bit_cast<uint32_t>(scalar.dot_q8_0(q.data(), row.data(), dim)),
              std::bit_cast<uint32_t>(scalar.dot_f32(q.data(), deq.data(), dim)));
    scalar.axpy_q8_0(acc.data(), 0.75f, row.data(), dim);
    scalar.axpy_f32(want.data(), 0.75f, deq.data(), dim);
    EXPECT_EQ(acc, want);
    // And those values are within Q8_0's step of the input.
    for (int64_t b = 0; b < dim / 32; ++b) {
      float amax = 0;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::abs(x[b * 32 + i]));
      for (int i = 0; i < 32; ++i) EXPECT_NEAR(deq[b * 32 + i], x[b * 32 + i], amax / 127 * 0.51 + 1e-3);
    }
  }
}

TEST(AttentionOpsTest, Q8VariantsMatchTheScalarTwinBitForBit) {
  const AttentionOps& scalar = AttentionOpsScalar();
  std::mt19937 rng(11);
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    for (int64_t dim : {32, 64, 128, 256}) {
      const AttentionOps& ops = AttentionOpsFor(isa, dim);
      for (int trial = 0; trial < 20; ++trial) {
        std::normal_distribution<float> dist(0, trial % 3 == 0 ? 100.0f : 1.0f);
        std::vector<float> q(dim), x(dim), acc(dim), acc2;
        for (int64_t i = 0; i < dim; ++i) q[i] = dist(rng), x[i] = dist(rng), acc[i] = dist(rng);
        std::vector<BlockQ8_0> row(dim / 32);
        QuantizeRowQ8_0(x.data(), row.data(), dim);
        EXPECT_EQ(std::bit_cast<uint32_t>(ops.dot_q8_0(q.data(), row.data(), dim)),
                  std::bit_cast<uint32_t>(scalar.dot_q8_0(q.data(), row.data(), dim)));
        acc2 = acc;
        const float p = std::abs(dist(rng));
        ops.axpy_q8_0(acc.data(), p, row.data(), dim);
        scalar.axpy_q8_0(acc2.data(), p, row.data(), dim);
        for (int64_t i = 0; i < dim; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(acc[i]), std::bit_cast<uint32_t>(acc2[i]))
              << KernelIsaName(isa) << " dim " << dim << " element " << i;
        }
      }
    }
  }
}

// The group ops against the scalar single-head ops, head by head, bit for
// bit: groups below, at and past the heads one pass keeps in registers.
TEST(AttentionOpsTest, GroupOpsOfEveryVariantAreTheSingleHeadOpsPerHeadAndRow) {
  const AttentionOps& scalar = AttentionOpsScalar();
  std::mt19937 rng(13);
  std::normal_distribution<float> dist(0, 1);
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvxVnni, KernelIsa::kAvx512, KernelIsa::kAvx512Vnni}) {
    if (!CpuSupports(isa)) continue;
    for (int64_t dim : {32, 64, 96, 128}) {
      const AttentionOps& ops = AttentionOpsFor(isa, dim);
      for (int64_t group : {1, 2, 3, 7, 8, 9, 16}) {
        std::vector<float> q(group * dim), k(dim), acc(group * dim), out(group);
        for (float& x : q) x = dist(rng);
        for (float& x : k) x = dist(rng);
        for (float& x : acc) x = dist(rng);
        std::vector<uint16_t> kh(dim);
        for (int64_t i = 0; i < dim; ++i) kh[i] = Fp32ToFp16(k[i]);
        std::vector<BlockQ8_0> kq(dim / 32);
        QuantizeRowQ8_0(k.data(), kq.data(), dim);
        const std::string where = std::string(KernelIsaName(isa)) + " dim " + std::to_string(dim) +
                                  " group " + std::to_string(group);
        auto check_dots = [&](auto group_op, auto single_op, const auto* row, const char* type) {
          group_op(q.data(), group, row, dim, out.data());
          for (int64_t h = 0; h < group; ++h) {
            ASSERT_EQ(std::bit_cast<uint32_t>(out[h]),
                      std::bit_cast<uint32_t>(single_op(q.data() + h * dim, row, dim)))
                << where << " " << type << " head " << h;
          }
        };
        check_dots(ops.dot_group_f32, scalar.dot_f32, k.data(), "f32");
        check_dots(ops.dot_group_f16, scalar.dot_f16, kh.data(), "f16");
        check_dots(ops.dot_group_q8_0, scalar.dot_q8_0, kq.data(), "q8_0");
        // Value rows: the key row and `rows` more of their own, each row's
        // weights per head; the single-head op row by row, head by head.
        auto check_axpys = [&](auto rows_op, auto single_op, const auto* row, auto widen_rows, const char* type) {
          for (int64_t rows : {1, 2, 5, 32}) {
            const auto others = widen_rows(rows);
            std::vector<const std::remove_cvref_t<decltype(*row)>*> v(static_cast<size_t>(rows));
            for (int64_t j = 0; j < rows; ++j) v[static_cast<size_t>(j)] = j == 0 ? row : others[static_cast<size_t>(j)].data();
            std::vector<float> pj(static_cast<size_t>(rows * group));
            for (float& x : pj) x = std::abs(dist(rng));
            pj[0] = 0.0f;  // A head a row does not weigh still adds 0 * v.
            std::vector<float> got = acc, want = acc;
            rows_op(got.data(), group, pj.data(), v.data(), rows, dim);
            for (int64_t j = 0; j < rows; ++j) {
              for (int64_t h = 0; h < group; ++h) single_op(want.data() + h * dim, pj[j * group + h], v[j], dim);
            }
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
                  << where << " " << type << " rows " << rows << " element " << i;
            }
          }
        };
        auto float_rows = [&](int64_t rows) {
          std::vector<std::vector<float>> r(static_cast<size_t>(rows), std::vector<float>(dim));
          for (auto& x : r) for (float& y : x) y = dist(rng);
          return r;
        };
        auto half_rows = [&](int64_t rows) {
          std::vector<std::vector<uint16_t>> r(static_cast<size_t>(rows), std::vector<uint16_t>(dim));
          for (auto& x : r) for (uint16_t& y : x) y = Fp32ToFp16(dist(rng));
          return r;
        };
        auto q8_rows = [&](int64_t rows) {
          std::vector<std::vector<BlockQ8_0>> r(static_cast<size_t>(rows), std::vector<BlockQ8_0>(dim / 32));
          std::vector<float> f(dim);
          for (auto& x : r) {
            for (float& y : f) y = dist(rng);
            QuantizeRowQ8_0(f.data(), x.data(), dim);
          }
          return r;
        };
        check_axpys(ops.axpy_rows_f32, scalar.axpy_f32, k.data(), float_rows, "f32");
        check_axpys(ops.axpy_rows_f16, scalar.axpy_f16, kh.data(), half_rows, "f16");
        check_axpys(ops.axpy_rows_q8_0, scalar.axpy_q8_0, kq.data(), q8_rows, "q8_0");
      }
    }
  }
}

// SoftmaxWeight is e^x from the math (libm in double) down to -87 and 0
// below it; a block's sum is the 16-lane order written out independently.
TEST(AttentionOpsTest, ScalarSoftmaxWeightsAreExpAndTheirSumFoldsInTheDocumentedOrder) {
  for (float x : {0.0f, -1e-3f, -0.5f, -1.0f, -10.0f, -40.0f, -86.0f, -87.0f}) {
    EXPECT_NEAR(SoftmaxWeight(x), std::exp(static_cast<double>(x)), 3e-7 * std::exp(static_cast<double>(x)))
        << x;
  }
  for (float x : {-87.01f, -88.0f, -104.0f, -1e6f, -INFINITY}) EXPECT_EQ(SoftmaxWeight(x), 0.0f) << x;
  EXPECT_TRUE(std::isnan(SoftmaxWeight(std::numeric_limits<float>::quiet_NaN())));

  std::mt19937 rng(17);
  std::normal_distribution<float> dist(0, 30);
  for (int64_t n : {1, 5, 16, 17, 31, 32, 40}) {
    std::vector<float> s(n);
    for (float& x : s) x = dist(rng);
    const float max = 25.0f;  // some scores below -87 of it, some near it
    std::vector<float> w(n);
    float lanes[16] = {};
    for (int64_t j = 0; j < n; ++j) {
      w[j] = SoftmaxWeight(s[j] - max);
      lanes[j % 16] = lanes[j % 16] + w[j];
    }
    float f8[8], f4[4], f2[2];
    for (int l = 0; l < 8; ++l) f8[l] = lanes[l] + lanes[l + 8];
    for (int l = 0; l < 4; ++l) f4[l] = f8[l] + f8[l + 4];
    for (int l = 0; l < 2; ++l) f2[l] = f4[l] + f4[l + 2];
    const float sum = AttentionOpsScalar().softmax_weights(s.data(), n, max);
    EXPECT_EQ(std::bit_cast<uint32_t>(sum), std::bit_cast<uint32_t>(f2[0] + f2[1])) << "n " << n;
    EXPECT_EQ(s, w) << "n " << n;
  }
}

TEST(AttentionOpsTest, SoftmaxWeightsOfEveryVariantMatchTheScalarTwinBitForBit) {
  const AttentionOps& scalar = AttentionOpsScalar();
  std::mt19937 rng(19);
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const AttentionOps& ops = AttentionOpsFor(isa, 64);
    for (int64_t n = 1; n <= 48; ++n) {
      std::normal_distribution<float> dist(0, n % 3 == 0 ? 60.0f : 2.0f);
      std::vector<float> s(n);
      for (float& x : s) x = dist(rng);
      float max = -INFINITY;
      for (float x : s) max = std::max(max, x);
      if (n > 3) s[1] = max - 87.0f, s[2] = max - 86.999f, s[3] = -INFINITY;  // either side of the cut
      std::vector<float> want = s;
      const float want_sum = scalar.softmax_weights(want.data(), n, max);
      const float got_sum = ops.softmax_weights(s.data(), n, max);
      EXPECT_EQ(std::bit_cast<uint32_t>(got_sum), std::bit_cast<uint32_t>(want_sum)) << KernelIsaName(isa) << " n " << n;
      for (int64_t j = 0; j < n; ++j) {
        ASSERT_EQ(std::bit_cast<uint32_t>(s[j]), std::bit_cast<uint32_t>(want[j]))
            << KernelIsaName(isa) << " n " << n << " key " << j;
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet
