// Quantizer properties derived from the formats' math: error bounds,
// exact round trips, zero handling, and relative quality.
#include "kernels/quantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/gaussian.h"

namespace swiftlet {
namespace {

std::vector<float> RoundTrip(TensorType type, const std::vector<float>& x) {
  uint64_t bytes = 0;
  EXPECT_TRUE(RowBytes(type, x.size(), &bytes));
  std::vector<uint8_t> q(bytes);
  QuantizeRow(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  std::vector<float> y(x.size());
  DequantizeRow(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
  return y;
}

double RelativeRms(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0, v = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    e += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
    v += double(x[i]) * x[i];
  }
  return std::sqrt(e / v);
}

const TensorType kAll[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                           TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0,
                           TensorType::kQ5_1, TensorType::kQ8_0, TensorType::kQ4_K,
                           TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kQ8_K};

TEST(QuantizeTest, ZeroRowsStayZero) {
  for (TensorType t : kAll) {
    SCOPED_TRACE(NameOf(t));
    std::vector<float> zeros(512, 0.0f);
    for (float y : RoundTrip(t, zeros)) EXPECT_EQ(y, 0.0f);
  }
}

TEST(QuantizeTest, Q8_0ErrorIsAtMostHalfAStep) {
  const std::vector<float> x = Gaussian(32 * 64, 1);
  const std::vector<float> y = RoundTrip(TensorType::kQ8_0, x);
  for (int b = 0; b < 64; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    // Values are rounded to steps of d = amax/127, then scaled by d stored
    // as F16 (relative error <= 2^-11), which moves a value up to 127 steps
    // by at most 127 * d * 2^-11.
    const float d = amax / 127;
    const float bound = d / 2 + 127 * d * std::ldexp(1.0f, -11) + 1e-7f;
    for (int j = 0; j < 32; ++j) EXPECT_LE(std::fabs(x[32 * b + j] - y[32 * b + j]), bound);
  }
}

TEST(QuantizeTest, Q8_KErrorBoundAndBlockSums) {
  const std::vector<float> x = Gaussian(256 * 4, 2);
  std::vector<BlockQ8_K> q(4);
  QuantizeRowQ8_K(x.data(), q.data(), 1024);
  for (int b = 0; b < 4; ++b) {
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[256 * b + j]));
    EXPECT_NEAR(q[b].d, amax / 127, amax * 1e-6f);
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += q[b].qs[16 * g + l];
      EXPECT_EQ(q[b].bsums[g], sum);
    }
    for (int j = 0; j < 256; ++j) {
      EXPECT_LE(std::fabs(x[256 * b + j] - q[b].d * q[b].qs[j]), q[b].d * 0.5f + 1e-6f);
    }
  }
}

TEST(QuantizeTest, RepresentableValuesRoundTripExactly) {
  // Integers times a power of two survive formats that can hold them.
  std::vector<float> q8(32), q4(32), k(256);
  for (int j = 0; j < 32; ++j) q8[j] = static_cast<float>(j - 16) * 0.25f;
  q8[0] = -127 * 0.25f;  // Sets d = 0.25 exactly.
  EXPECT_EQ(RoundTrip(TensorType::kQ8_0, q8), q8);
  for (int j = 0; j < 32; ++j) q4[j] = static_cast<float>((j % 16) - 8) * 0.5f;  // max -4 -> d 0.5
  EXPECT_EQ(RoundTrip(TensorType::kQ4_0, q4), q4);
  for (int j = 0; j < 256; ++j) k[j] = static_cast<float>(j % 7) * 0.125f;
  EXPECT_EQ(RoundTrip(TensorType::kF16, k), k);
  EXPECT_EQ(RoundTrip(TensorType::kBF16, k), k);
}

TEST(QuantizeTest, ConstantRowsAreNearlyExact) {
  for (TensorType t : kAll) {
    SCOPED_TRACE(NameOf(t));
    std::vector<float> c(256, 0.75f);
    for (float y : RoundTrip(t, c)) EXPECT_NEAR(y, 0.75f, 0.75f * 0.01f);
  }
}

TEST(QuantizeTest, RelativeRmsOfGaussianDataStaysWithinFormatBounds) {
  // Bounds for N(0,1) data: a uniform quantizer with step s has RMS error
  // s/sqrt(12). Q8_0's step is amax/127 with amax ~2.5 sigma in 32 samples:
  // ~0.6% of sigma. 4-bit formats with 16 levels over the block range give
  // ~8-12%, 5-bit ~4-6%, 6-bit ~2-3%; each bound below has ~30% headroom.
  const std::vector<float> x = Gaussian(256 * 64, 3);
  struct Case {
    TensorType type;
    double bound;
  } cases[] = {{TensorType::kF16, 5e-4},  {TensorType::kBF16, 4e-3}, {TensorType::kQ8_0, 0.01},
               {TensorType::kQ8_K, 0.012}, {TensorType::kQ6_K, 0.035}, {TensorType::kQ5_K, 0.06},
               {TensorType::kQ5_0, 0.07},  {TensorType::kQ5_1, 0.07},  {TensorType::kQ4_K, 0.12},
               {TensorType::kQ4_0, 0.14},  {TensorType::kQ4_1, 0.14}};
  for (const Case& c : cases) {
    const double rel = RelativeRms(x, RoundTrip(c.type, x));
    EXPECT_LT(rel, c.bound) << NameOf(c.type);
    EXPECT_GT(rel, 0.0) << NameOf(c.type);
  }
  // The K-quants' per-sub-block scales beat one scale per 32 values.
  EXPECT_LT(RelativeRms(x, RoundTrip(TensorType::kQ4_K, x)),
            RelativeRms(x, RoundTrip(TensorType::kQ4_0, x)));
  EXPECT_LT(RelativeRms(x, RoundTrip(TensorType::kQ5_K, x)),
            RelativeRms(x, RoundTrip(TensorType::kQ5_0, x)));
}

TEST(QuantizeTest, OutliersAndMixedScalesStayFinite) {
  std::vector<float> x = Gaussian(256 * 4, 4, 1e-3f);
  x[5] = 1000.0f;     // One huge value in the first block.
  x[300] = -1e-30f;   // A denormal-scale value.
  for (int j = 512; j < 768; ++j) x[j] = 1e4f * static_cast<float>(j % 3);
  for (TensorType t : kAll) {
    SCOPED_TRACE(NameOf(t));
    for (float y : RoundTrip(t, x)) EXPECT_TRUE(std::isfinite(y));
  }
}

}  // namespace
}  // namespace swiftlet
