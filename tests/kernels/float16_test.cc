// Compares the portable conversions with the F16C instructions of this CPU
// (an independent implementation in hardware).
#include "kernels/float16.h"

#include "f16c_reference.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

TEST(Float16Test, HalfToFloatMatchesF16cForAllPatterns) {
  if (!testing::HasF16c()) GTEST_SKIP() << "no F16C on this CPU to compare with";
  for (uint32_t h = 0; h < 65536; ++h) {
    const float mine = Fp16ToFp32(static_cast<uint16_t>(h));
    const float hw = testing::HardwareHalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(mine)) << h;
    } else {
      EXPECT_EQ(std::bit_cast<uint32_t>(mine), std::bit_cast<uint32_t>(hw)) << h;
    }
  }
}

void ExpectSameAsF16c(float x) {
  const uint16_t mine = Fp32ToFp16(x);
  const uint16_t hw = testing::HardwareFloatToHalf(x);
  if (std::isnan(x)) {
    EXPECT_EQ(mine & 0x7C00, 0x7C00);
    EXPECT_NE(mine & 0x3FF, 0);
  } else {
    EXPECT_EQ(mine, hw) << x << " bits " << std::bit_cast<uint32_t>(x);
  }
}

TEST(Float16Test, FloatToHalfMatchesF16c) {
  if (!testing::HasF16c()) GTEST_SKIP() << "no F16C on this CPU to compare with";
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.99f, 65520.0f, 1e6f, -1e-8f,
                  5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, 6.1035156e-05f, 6.10e-05f,
                  INFINITY, -INFINITY, NAN}) {
    ExpectSameAsF16c(x);
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 2000000; ++i) {
    // Random bit patterns cover every exponent, including subnormal halves,
    // rounding ties and overflow.
    ExpectSameAsF16c(std::bit_cast<float>(static_cast<uint32_t>(rng())));
  }
  // Every exact tie between two adjacent halves.
  for (uint32_t h = 0; h < 0x7BFF; ++h) {
    const float a = testing::HardwareHalfToFloat(static_cast<uint16_t>(h));
    const float b = testing::HardwareHalfToFloat(static_cast<uint16_t>(h + 1));
    ExpectSameAsF16c(a + (b - a) / 2);
  }
}

TEST(Float16Test, Bfloat16ByHand) {
  EXPECT_EQ(Fp32ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(Fp32ToBf16(-2.0f), 0xC000);
  // 1 + 2^-8 lies exactly between 0x3F80 and 0x3F81: ties go to even.
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x3F808000u)), 0x3F80);
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x3F818000u)), 0x3F82);
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x3F808001u)), 0x3F81);
  EXPECT_EQ(Fp32ToBf16(INFINITY), 0x7F80);
  EXPECT_EQ(Fp32ToBf16(std::bit_cast<float>(0x7F7FFFFFu)), 0x7F80);  // Max float rounds up.
  const uint16_t nan = Fp32ToBf16(std::bit_cast<float>(0x7F800001u));  // Signalling NaN.
  EXPECT_TRUE(std::isnan(Bf16ToFp32(nan)));
  EXPECT_EQ(Bf16ToFp32(0x4049), std::bit_cast<float>(0x40490000u));
}

}  // namespace
}  // namespace swiftlet

namespace swiftlet {
namespace {

TEST(Float16Test, RowConversionMatchesTheScalarOneBitForBit) {
  std::mt19937 rng(21);
  std::uniform_int_distribution<uint32_t> bits;
  for (int64_t n : {1, 7, 8, 9, 64, 191, 1000}) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = std::bit_cast<float>(bits(rng));  // every kind: NaN, subnormal, huge
    const float specials[] = {65504.0f, 65520.0f, 65519.99f, 5.96e-8f, 2.98e-8f, -0.0f, 1e-45f};
    for (int64_t i = 0; i < n && i < 7; ++i) x[i * 1] = specials[i];
    std::vector<uint16_t> row(n);
    Fp32ToFp16Row(x.data(), row.data(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(row[i], Fp32ToFp16(x[i])) << "n " << n << " element " << i;
  }
}

}  // namespace
}  // namespace swiftlet
