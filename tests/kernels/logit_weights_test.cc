// A sampler's logit weights and their block sums: the scalar specification
// against its formula (the exponential in double, the sums in long double),
// and every SIMD twin against the scalar one, bit for bit.
#include "kernels/logit_weights.h"
#include "simd_twin_isas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

constexpr float kNaNLogit = std::numeric_limits<float>::quiet_NaN();
constexpr float kInfLogit = std::numeric_limits<float>::infinity();

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(LogitWeightsTest, ScalarIsTheScaledExponentialBelowTheMax) {
  std::mt19937 rng(21);
  std::normal_distribution<float> normal(0, 10);
  for (float scale : {20.0f, 1.0f / 0.7f, 1.0f, 0.4f}) {
    std::vector<float> x(777);
    for (float& v : x) v = normal(rng);
    x[5] = kNaNLogit, x[6] = -kInfLogit;
    float want_max = -kInfLogit;
    for (float v : x) want_max = std::isnan(v) ? want_max : std::max(want_max, v);
    std::vector<float> w = x;
    ASSERT_EQ(LogitWeightsScalar(w.data(), static_cast<int64_t>(w.size()), scale), want_max);
    for (size_t i = 0; i < x.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "scale " << scale << " id " << i);
      if (std::isnan(x[i])) {
        ASSERT_EQ(std::bit_cast<uint32_t>(w[i]), 0u);  // +0: never drawn
        continue;
      }
      // The exponent is a float product, within an ulp or two of this
      // (|e| * 2.4e-7 relative on e^e), besides the exp's own 2 ulp.
      const double e = (static_cast<double>(x[i]) - want_max) * scale;
      if (e < -87.0 * (1 + 1e-6)) {
        ASSERT_EQ(w[i], 0.0f);
      } else if (e > -87.0 * (1 - 1e-6)) {
        ASSERT_NEAR(w[i], std::exp(e), (3e-7 + 2.4e-7 * std::fabs(e)) * std::exp(e));
      }
      if (x[i] == want_max) {
        ASSERT_EQ(w[i], 1.0f);
      }
    }
  }
}

TEST(LogitWeightsTest, NoFiniteMaxLeavesTheRowAsItWas) {
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!CpuSupports(isa)) continue;  // not on this CPU
    const LogitWeightsFn fn = LogitWeightsFor(isa);
    for (int64_t n : {1, 3, 16, 17, 100}) {
      std::vector<float> masked(n, -kInfLogit);
      for (int64_t i = 0; i < n; i += 3) masked[i] = kNaNLogit;
      std::vector<float> row = masked;
      EXPECT_EQ(fn(row.data(), n, 1.0f), -kInfLogit) << KernelIsaName(isa) << " n " << n;
      EXPECT_TRUE(SameBits(row, masked));
      std::vector<float> with_inf(n, 1.0f);
      with_inf[n / 2] = kInfLogit;
      row = with_inf;
      EXPECT_EQ(fn(row.data(), n, 1.0f), kInfLogit) << KernelIsaName(isa) << " n " << n;
      EXPECT_TRUE(SameBits(row, with_inf));
    }
  }
}

TEST(LogitWeightsTest, AZeroMaxIsPlusZero) {
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!CpuSupports(isa)) continue;  // not on this CPU
    for (int64_t n : {3, 16, 40, 100}) {
      std::vector<float> x(n, -1.0f);
      x[1] = -0.0f;
      x[n - 1] = 0.0f;
      EXPECT_EQ(std::bit_cast<uint32_t>(LogitWeightsFor(isa)(x.data(), n, 2.0f)), 0u) << KernelIsaName(isa) << " " << n;
      EXPECT_EQ(x[1], 1.0f);
      EXPECT_EQ(x[n - 1], 1.0f);
      x.assign(n, -0.0f);  // Only -0: still +0.
      EXPECT_EQ(std::bit_cast<uint32_t>(LogitWeightsFor(isa)(x.data(), n, 2.0f)), 0u) << KernelIsaName(isa) << " " << n;
    }
  }
}

// A row for the twins: `spread` apart (some far enough below the max that
// their weight is 0, some either side of the exp's floor), NaN and -inf
// sprinkled when `holes`, the max at `at`, and a -0/+0 tie for the max
// when `zero_max`.
std::vector<float> Row(std::mt19937& rng, int64_t n, float spread, bool holes, int64_t at, bool zero_max) {
  std::normal_distribution<float> normal(0, spread);
  std::vector<float> x(n);
  for (float& v : x) v = -std::fabs(normal(rng)) - 1.0f;
  if (holes) {
    for (int64_t i = 0; i < n; ++i) {
      if (rng() % 7 == 0) x[i] = rng() % 2 ? kNaNLogit : -kInfLogit;
    }
  }
  x[at] = zero_max ? -0.0f : 5.0f;
  if (zero_max) x[(at + n / 2) % n] = 0.0f;
  return x;
}

TEST(LogitWeightsTest, EverySimdTwinGivesTheScalarBits) {
  std::mt19937 rng(22);
  int checked = 0;
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const LogitWeightsFn fn = LogitWeightsFor(isa);
    std::vector<int64_t> lengths;
    for (int64_t n = 1; n <= 70; ++n) lengths.push_back(n);  // every tail, every lane
    for (int64_t n : {127, 1001, 32000, 151936}) lengths.push_back(n);
    for (int64_t n : lengths) {
      for (int variant = 0; variant < 6; ++variant) {
        const float spread = variant % 3 == 0 ? 100.0f : variant % 3 == 1 ? 3.0f : 0.01f;
        const float scale = variant < 2 ? 1.0f : variant < 4 ? 1.0f / 0.05f : 1e-3f;
        const int64_t at = static_cast<int64_t>(rng() % n);
        const std::vector<float> x = Row(rng, n, spread, variant % 2 == 1, at, variant == 4);
        std::vector<float> want = x, got = x;
        const float want_max = LogitWeightsScalar(want.data(), n, scale);
        const float got_max = fn(got.data(), n, scale);
        ASSERT_EQ(std::bit_cast<uint32_t>(got_max), std::bit_cast<uint32_t>(want_max))
            << KernelIsaName(isa) << " n " << n << " variant " << variant;
        for (int64_t i = 0; i < n; ++i) {
          ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
              << KernelIsaName(isa) << " n " << n << " variant " << variant << " id " << i << ": " << got[i]
              << " vs " << want[i] << " (logit " << x[i] << ")";
        }
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD twin on this CPU";
}

// Weights as a sampler sees them: in [0, 1], the largest 1, many far below
// it, some exactly 0 (masked ids), and with `holes` whole blocks of 0.
std::vector<float> Weights(std::mt19937& rng, int64_t n, bool holes) {
  std::exponential_distribution<float> below_max(0.3f);
  std::vector<float> w(static_cast<size_t>(n));
  for (float& v : w) v = std::exp(-below_max(rng));
  for (int64_t i = 0; i < n; i += 7) w[static_cast<size_t>(i)] = 0.0f;
  if (holes) {
    for (int64_t i = 64; i < std::min<int64_t>(n, 192); ++i) w[static_cast<size_t>(i)] = 0.0f;
  }
  w[static_cast<size_t>(rng() % n)] = 1.0f;
  return w;
}

TEST(WeightBlockSumsTest, ScalarSumsEachBlockOfSixtyFourAndThenTheBlocksInOrder) {
  std::mt19937 rng(23);
  for (int64_t n : {1, 5, 63, 64, 65, 200, 4096, 32001}) {
    const std::vector<float> w = Weights(rng, n, n > 192);
    const int64_t blocks = (n + kWeightBlock - 1) / kWeightBlock;
    std::vector<double> sums(static_cast<size_t>(blocks) + 1, -1.0);  // one past: never written
    const double total = WeightBlockSumsScalar(w.data(), n, sums.data());
    long double want_total = 0;
    for (int64_t b = 0; b < blocks; ++b) {
      long double want = 0;
      for (int64_t i = b * kWeightBlock; i < std::min(n, (b + 1) * kWeightBlock); ++i) want += w[static_cast<size_t>(i)];
      // 64 double adds of terms >= 0: within 64 ulp of the sum.
      ASSERT_NEAR(sums[static_cast<size_t>(b)], static_cast<double>(want), 1e-14 * static_cast<double>(want))
          << "n " << n << " block " << b;
      want_total += want;
    }
    EXPECT_EQ(sums[static_cast<size_t>(blocks)], -1.0) << n;
    EXPECT_NEAR(total, static_cast<double>(want_total), 1e-13 * static_cast<double>(want_total)) << n;
    // The total is the block sums' own running sum, in order.
    double running = 0.0;
    for (int64_t b = 0; b < blocks; ++b) running += sums[static_cast<size_t>(b)];
    EXPECT_EQ(std::bit_cast<uint64_t>(total), std::bit_cast<uint64_t>(running)) << n;
    // Without the block sums: the same total.
    EXPECT_EQ(std::bit_cast<uint64_t>(WeightBlockSumsScalar(w.data(), n, nullptr)), std::bit_cast<uint64_t>(total));
  }
}

TEST(WeightBlockSumsTest, EverySimdTwinGivesTheScalarBits) {
  std::mt19937 rng(24);
  int checked = 0;
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const WeightBlockSumsFn fn = WeightBlockSumsFor(isa);
    std::vector<int64_t> lengths;
    for (int64_t n = 1; n <= 150; ++n) lengths.push_back(n);  // every short block, every lane
    for (int64_t n : {1001, 32000, 151936}) lengths.push_back(n);
    for (int64_t n : lengths) {
      for (bool holes : {false, true}) {
        // Weights of every size, so that a sum's order shows in its last bits.
        std::vector<float> w = Weights(rng, n, holes);
        for (float& v : w) v *= std::ldexp(1.0f, -static_cast<int>(rng() % 40));
        const int64_t blocks = (n + kWeightBlock - 1) / kWeightBlock;
        std::vector<double> want(static_cast<size_t>(blocks)), got(static_cast<size_t>(blocks));
        const double want_total = WeightBlockSumsScalar(w.data(), n, want.data());
        const double got_total = fn(w.data(), n, got.data());
        ASSERT_EQ(std::bit_cast<uint64_t>(got_total), std::bit_cast<uint64_t>(want_total))
            << KernelIsaName(isa) << " n " << n;
        ASSERT_EQ(std::bit_cast<uint64_t>(fn(w.data(), n, nullptr)), std::bit_cast<uint64_t>(want_total));
        for (int64_t b = 0; b < blocks; ++b) {
          ASSERT_EQ(std::bit_cast<uint64_t>(got[static_cast<size_t>(b)]), std::bit_cast<uint64_t>(want[static_cast<size_t>(b)]))
              << KernelIsaName(isa) << " n " << n << " block " << b;
        }
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD twin on this CPU";
}

}  // namespace
}  // namespace swiftlet
