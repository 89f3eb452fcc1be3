// KernelExp against libm's exp in double (an independent implementation).
#include "kernels/kernel_exp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

namespace swiftlet {
namespace {

TEST(KernelExpTest, IsWithinTwoUlpOfLibm) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-87.0f, 88.0f);
  float worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const float x = i < 100 ? static_cast<float>(i - 50) : dist(rng);
    const double want = std::exp(static_cast<double>(x));
    const double ulp = std::nextafter(static_cast<float>(want), std::numeric_limits<float>::infinity()) -
                       static_cast<float>(want);
    worst = std::max(worst, static_cast<float>(std::fabs(KernelExp(x) - want) / ulp));
  }
  EXPECT_LE(worst, 2.0f);
  EXPECT_EQ(KernelExp(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(KernelExp(std::numeric_limits<float>::quiet_NaN())));
  // Clamped outside the range: finite, never infinity or a subnormal.
  EXPECT_EQ(KernelExp(1000.0f), KernelExp(88.0f));
  EXPECT_TRUE(std::isnormal(KernelExp(-1000.0f)));
}

}  // namespace
}  // namespace swiftlet
