// The SiLU gate against its formula in double, and every SIMD twin
// against the scalar specification, bit for bit.
#include "kernels/silu.h"
#include "simd_twin_isas.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

TEST(SiluTest, GateMatchesTheFormula) {
  std::mt19937 rng(4);
  std::normal_distribution<float> dist(0, 4);
  std::vector<float> gate(1000), up(1000), want(1000);
  for (int i = 0; i < 1000; ++i) {
    gate[i] = dist(rng), up[i] = dist(rng);
    want[i] = static_cast<float>(gate[i] / (1.0 + std::exp(-static_cast<double>(gate[i]))) * up[i]);
  }
  SiluMulScalar(gate.data(), up.data(), 1000);
  for (int i = 0; i < 1000; ++i) EXPECT_NEAR(gate[i], want[i], 1e-6f * (1 + std::fabs(want[i]))) << i;
}

TEST(SiluTest, EveryVariantMatchesTheScalarTwinBitForBit) {
  std::mt19937 rng(5);
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const SiluMulFn fn = SiluMulFor(isa);
    for (int trial = 0; trial < 40; ++trial) {
      const int64_t n = 1 + trial * 37;  // tails of every length
      std::normal_distribution<float> dist(0, trial % 4 == 0 ? 200.0f : 3.0f);
      std::vector<float> gate(n), up(n);
      for (int64_t i = 0; i < n; ++i) gate[i] = dist(rng), up[i] = dist(rng);
      if (n > 3) gate[1] = -0.0f, gate[2] = std::numeric_limits<float>::quiet_NaN(), gate[3] = 1e30f;
      std::vector<float> want = gate;
      SiluMulScalar(want.data(), up.data(), n);
      fn(gate.data(), up.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(std::bit_cast<uint32_t>(gate[i]), std::bit_cast<uint32_t>(want[i]))
            << KernelIsaName(isa) << " n " << n << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet
