// ExpOfLogitsInPlace against the exponential computed in double, and
// DrawFromWeights against running sums in long double.
#include "model/logit_math.h"

#include <gtest/gtest.h>

#include <algorithm>
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

// The id a draw of `target` must give, from running sums in long double:
// the first whose sum passes target. `ambiguous` when target is within
// `slack` of a running sum, where rounding decides.
struct WantedDraw {
  int64_t id = -1;
  bool ambiguous = false;
};
WantedDraw ExactDraw(const std::vector<float>& w, double target, long double slack) {
  WantedDraw want;
  long double running = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0.0f) continue;
    running += w[i];
    if (std::fabs(static_cast<double>(running - target)) <= slack) want.ambiguous = true;
    if (running > target) {
      want.id = static_cast<int64_t>(i);
      return want;
    }
  }
  return want;  // Past the total.
}

TEST(LogitMathTest, DrawFromWeightsTakesTheFirstIdWhoseRunningSumPassesTheTarget) {
  std::mt19937_64 rng(12);
  std::exponential_distribution<float> below_max(0.5f);
  for (int64_t n : {1, 2, 63, 64, 65, 129, 1000, 40000}) {
    std::vector<float> w(static_cast<size_t>(n));
    for (float& v : w) v = std::exp(-below_max(rng));
    // Masked ids, a whole block of them, and the largest weight 1.
    for (int64_t i = 3; i < n; i += 5) w[static_cast<size_t>(i)] = 0.0f;
    for (int64_t i = 64; i < std::min<int64_t>(n, 128); ++i) w[static_cast<size_t>(i)] = 0.0f;
    w[static_cast<size_t>(n / 2)] = 1.0f;
    std::vector<double> sums(static_cast<size_t>(WeightBlocks(n)));
    const double total = WeightBlockSums(w.data(), n, sums.data());
    const long double slack = 1e-12L * total;
    std::vector<double> targets = {0.0, total * (1 - 1e-9)};
    for (int i = 0; i < 400; ++i) targets.push_back(static_cast<double>(rng() >> 11) * 0x1p-53 * total);
    // Each block's edge, just below and just above.
    double edge = 0.0;
    for (double s : sums) {
      edge += s;
      targets.push_back(edge * (1 - 1e-9));
      targets.push_back(edge * (1 + 1e-9));
    }
    int exact = 0;
    for (double target : targets) {
      if (target >= total) continue;
      SCOPED_TRACE(testing::Message() << "n " << n << " target " << target << " of " << total);
      const int64_t got = DrawFromWeights(w.data(), n, sums.data(), target);
      ASSERT_GE(got, 0);
      ASSERT_LT(got, n);
      ASSERT_GT(w[static_cast<size_t>(got)], 0.0f);  // never a masked id
      const WantedDraw want = ExactDraw(w, target, slack);
      if (want.ambiguous) continue;
      ASSERT_EQ(got, want.id);
      ++exact;
    }
    EXPECT_GT(exact, 300) << n;
  }
}

TEST(LogitMathTest, DrawFromWeightsAtOrPastTheTotalTakesTheLastWeightedId) {
  // Rounding can leave u * total at the total: the last id of weight above
  // 0, never a masked one after it.
  std::vector<float> w(300, 0.0f);
  w[0] = 0.5f;
  w[70] = 1.0f;
  w[200] = 0.25f;  // 201..299 masked
  std::vector<double> sums(static_cast<size_t>(WeightBlocks(300)));
  const double total = WeightBlockSums(w.data(), 300, sums.data());
  EXPECT_EQ(total, 1.75);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), total), 200);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), 2 * total), 200);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), 0.0), 0);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), 0.5), 70);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), 1.4999), 70);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), 1.5), 200);
  // A block whose sum passes target while its ids' running sum, in their
  // own order, does not (a block sum rounded up): the block's last
  // weighted id. Made here by handing the draw a block sum a little high.
  sums[1] = std::nextafter(sums[1], 2.0);
  EXPECT_EQ(DrawFromWeights(w.data(), 300, sums.data(), 1.5), 70);
  EXPECT_EQ(SumOfWeights(w.data(), 300), total);
}

}  // namespace
}  // namespace swiftlet
