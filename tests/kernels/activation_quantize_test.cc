// The SIMD activation quantizers against their scalar twins, bit for bit,
// on rows built to reach the awkward cases: all-zero blocks, exact
// rounding halves (x * id = k + 0.5 must go to the even k), the block
// maximum itself (|q| = 127) and values from tiny to huge.
#include "kernels/activation_quantize.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/quantize.h"
#include "simd_twin_isas.h"

namespace swiftlet {
namespace {

std::vector<float> AwkwardRow(std::mt19937& rng, int64_t n, int trial) {
  std::normal_distribution<float> dist(0, trial % 3 == 0 ? 1e4f : (trial % 3 == 1 ? 1.0f : 1e-6f));
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  for (int64_t b = 0; b < n / 32; ++b) {
    float* block = x.data() + b * 32;
    switch ((b + trial) % 4) {
      case 0:  // All zeros: the scale is 0 and so is every q.
        std::fill(block, block + 32, 0.0f);
        break;
      case 1:  // Max 127 exactly: id = 1, and halves round to even.
        block[0] = 127.0f;
        for (int j = 1; j < 32; ++j) block[j] = static_cast<float>(j % 9) - 4.5f;
        break;
      case 2:  // Negative maximum, signed zeros.
        block[3] = -1000.0f;
        block[4] = -0.0f;
        break;
      default:
        break;
    }
  }
  return x;
}

TEST(ActivationQuantizeTest, EveryVariantMatchesTheScalarQuantizersBitForBit) {
  std::mt19937 rng(17);
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const ActivationQuantizers& q = ActivationQuantizersFor(isa);
    for (int trial = 0; trial < 60; ++trial) {
      const int64_t n = 256 * (1 + trial % 6);
      const std::vector<float> x = AwkwardRow(rng, n, trial);
      std::vector<BlockQ8_0> got0(n / 32), want0(n / 32);
      q.q8_0(x.data(), got0.data(), n);
      QuantizeRowQ8_0(x.data(), want0.data(), n);
      ASSERT_EQ(std::memcmp(got0.data(), want0.data(), got0.size() * sizeof(BlockQ8_0)), 0)
          << KernelIsaName(isa) << " Q8_0 trial " << trial;
      std::vector<BlockQ8_K> gotk(n / 256), wantk(n / 256);
      q.q8_k(x.data(), gotk.data(), n);
      QuantizeRowQ8_K(x.data(), wantk.data(), n);
      ASSERT_EQ(std::memcmp(gotk.data(), wantk.data(), gotk.size() * sizeof(BlockQ8_K)), 0)
          << KernelIsaName(isa) << " Q8_K trial " << trial;
    }
  }
}

// A NaN or an infinity in a row (a diverged model's activations): every
// variant still gives the scalar code's bytes, NaN skipped by the maximum
// wherever it sits in the block.
TEST(ActivationQuantizeTest, NanAndInfinityGiveTheScalarBytes) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const ActivationQuantizers& q = ActivationQuantizersFor(isa);
    for (int pos : {0, 7, 8, 15, 16, 31, 200, 255}) {
      for (float odd : {nan, -nan, inf, -inf}) {
        std::vector<float> x(256);
        for (int j = 0; j < 256; ++j) x[j] = static_cast<float>((j * 37) % 19) - 9.0f;
        x[pos] = odd;
        std::vector<BlockQ8_0> got0(8), want0(8);
        q.q8_0(x.data(), got0.data(), 256);
        QuantizeRowQ8_0(x.data(), want0.data(), 256);
        EXPECT_EQ(std::memcmp(got0.data(), want0.data(), sizeof(BlockQ8_0) * 8), 0)
            << KernelIsaName(isa) << " Q8_0, " << odd << " at " << pos;
        BlockQ8_K gotk, wantk;
        q.q8_k(x.data(), &gotk, 256);
        QuantizeRowQ8_K(x.data(), &wantk, 256);
        EXPECT_EQ(std::memcmp(&gotk, &wantk, sizeof(BlockQ8_K)), 0)
            << KernelIsaName(isa) << " Q8_K, " << odd << " at " << pos;
      }
    }
  }
}

TEST(ActivationQuantizeTest, HalvesRoundToEvenAsTheSpecificationSays) {
  // Independent of both implementations: with max 127 the scale is 1, so
  // each q is x rounded half-to-even.
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  x[4] = 0.5f;
  x[5] = -126.5f;
  const int8_t want[] = {127, 2, -2, 4, 0, -126};
  for (KernelIsa isa : {KernelIsa::kScalar, KernelIsa::kAvx2, KernelIsa::kAvx512}) {
    if (!CpuSupports(isa)) continue;
    BlockQ8_0 b;
    ActivationQuantizersFor(isa).q8_0(x.data(), &b, 32);
    for (int j = 0; j < 6; ++j) EXPECT_EQ(b.qs[j], want[j]) << KernelIsaName(isa) << " element " << j;
  }
}

}  // namespace
}  // namespace swiftlet
