// ExpOfLogitsInPlace against the exponential computed in double.
#include "model/logit_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

TEST(LogitMathTest, ExpOfLogitsIsTheScaledExponentialBelowTheMax) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0, 8);
  // A length that is not a whole number of 16-lane vectors, logits far
  // enough apart that some exponents fall below -87, and masked ids.
  for (int64_t n : {1, 15, 16, 1001}) {
    for (float temperature : {0.05f, 0.7f, 1.0f, 2.5f}) {
      std::vector<float> logits(static_cast<size_t>(n));
      for (float& v : logits) v = normal(rng);
      if (n > 2) logits[1] = -std::numeric_limits<float>::infinity();
      std::vector<float> p = logits;
      const float max = ExpOfLogitsInPlace(p.data(), n, temperature);
      float want_max = -std::numeric_limits<float>::infinity();
      for (float v : logits) want_max = std::max(want_max, v);
      ASSERT_EQ(max, want_max);
      for (int64_t i = 0; i < n; ++i) {
        SCOPED_TRACE(testing::Message() << "n " << n << " temperature " << temperature << " id " << i);
        // e^((x - max) / t) in double. The function's exponent is a float
        // product, within an ulp or two of this: |x| * 2.4e-7 relative on
        // e^x, besides the exp's own 2 ulp.
        const double x = (static_cast<double>(logits[i]) - want_max) / temperature;
        if (x < -87.0 * (1 + 1e-6)) {
          ASSERT_EQ(p[i], 0.0f);
          continue;
        }
        if (x < -87.0 * (1 - 1e-6)) continue;  // Either side of the floor.
        const double want = std::exp(x);
        ASSERT_NEAR(p[i], want, (3e-7 + 2.4e-7 * std::fabs(x)) * want);
        if (logits[i] == want_max) {
          ASSERT_EQ(p[i], 1.0f);
        }
      }
    }
  }
}

TEST(LogitMathTest, NaNWeighsNothingAndTinyTemperaturesKeepOnlyTheMax) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {1.0f, nan, 3.0f, 2.0f, nan};
  EXPECT_EQ(ExpOfLogitsInPlace(x.data(), 5, 1.0f), 3.0f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[4], 0.0f);
  EXPECT_EQ(x[2], 1.0f);
  EXPECT_NEAR(x[3], std::exp(-1.0), 3e-7);
  // 1 / 1e-39 overflows a float: the exponents are divided instead.
  x = {0.0f, 1.0f, 2.0f, 0.5f};
  EXPECT_EQ(ExpOfLogitsInPlace(x.data(), 4, 1e-39f), 2.0f);
  EXPECT_EQ(x, (std::vector<float>{0.0f, 0.0f, 1.0f, 0.0f}));
  // Nothing but NaN and -inf: no max.
  x = {nan, -std::numeric_limits<float>::infinity()};
  EXPECT_EQ(ExpOfLogitsInPlace(x.data(), 2, 1.0f), -std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace swiftlet
