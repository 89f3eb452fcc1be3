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
        // The exponent as the function forms it, then e^ in double.
        const float x = (logits[i] - want_max) * (1.0f / temperature);
        if (!(x >= -87.0f)) {
          ASSERT_EQ(p[i], 0.0f);
          continue;
        }
        const double want = std::exp(static_cast<double>(x));
        ASSERT_NEAR(p[i], want, 3e-7 * want);
        if (logits[i] == want_max) {
          ASSERT_EQ(p[i], 1.0f);
        }
      }
    }
  }
}

}  // namespace
}  // namespace swiftlet
