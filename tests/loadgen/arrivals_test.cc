// ArrivalGaps: the gaps have the mean and spread the rate and burstiness
// ask for (moments of 20000 seeded draws against the distribution's own),
// and a seed repeats its sequence.
#include "loadgen/arrivals.h"

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace swiftlet::loadgen {
namespace {

struct Moments {
  double mean_s = 0;
  double cv2 = 0;  // Variance / mean^2.
};

Moments Draw(double rate, double burstiness, uint64_t seed, int n) {
  ArrivalGaps gaps(rate, burstiness, seed);
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    const double s = static_cast<double>(gaps.NextNs()) / 1e9;
    sum += s;
    sum2 += s * s;
  }
  const double mean = sum / n;
  return {mean, (sum2 / n - mean * mean) / (mean * mean)};
}

TEST(ArrivalGapsTest, MeanIsTheReciprocalRateAndSpreadIsTheBurstiness) {
  for (double burstiness : {0.25, 1.0, 4.0}) {
    const Moments m = Draw(8.0, burstiness, 42, 20000);
    EXPECT_NEAR(m.mean_s, 0.125, 0.125 * 0.05) << burstiness;
    // A gamma with shape k has CV^2 = 1 / k = burstiness.
    EXPECT_NEAR(m.cv2, burstiness, burstiness * 0.12) << burstiness;
  }
}

// The documented draws themselves: std::mt19937_64 through the standard
// exponential and gamma distributions, rounded to nanoseconds.
TEST(ArrivalGapsTest, GapsAreTheStandardDistributionsDraws) {
  ArrivalGaps poisson(200, 1.0, 99), gamma(50, 4.0, 3);
  std::mt19937_64 rng_e(99), rng_g(3);
  std::exponential_distribution<double> exponential(200.0);
  std::gamma_distribution<double> gamma_reference(0.25, 4.0 / 50);
  for (int i = 0; i < 200; ++i) {
    ASSERT_EQ(poisson.NextNs(), std::llround(exponential(rng_e) * 1e9)) << i;
    ASSERT_EQ(gamma.NextNs(), std::llround(gamma_reference(rng_g) * 1e9)) << i;
  }
}

TEST(ArrivalGapsTest, SeedRepeatsAndDiffers) {
  ArrivalGaps a(5, 1, 7), b(5, 1, 7), c(5, 1, 8);
  bool differs = false;
  for (int i = 0; i < 50; ++i) {
    const int64_t x = a.NextNs();
    EXPECT_EQ(x, b.NextNs());
    differs |= x != c.NextNs();
  }
  EXPECT_TRUE(differs);
}

TEST(ArrivalGapsTest, InfiniteRateGivesZeroGaps) {
  ArrivalGaps g(std::numeric_limits<double>::infinity(), 2, 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(g.NextNs(), 0);
}

TEST(ArrivalGapsTest, ValidateNamesTheBadArgument) {
  EXPECT_TRUE(ArrivalGaps::Validate(1, 1).ok());
  EXPECT_EQ(ArrivalGaps::Validate(0, 1).message(), "rate: must be > 0");
  EXPECT_EQ(ArrivalGaps::Validate(std::nan(""), 1).message(), "rate: must be > 0");
  EXPECT_EQ(ArrivalGaps::Validate(1, 0).message(), "burstiness: must be finite and > 0");
  EXPECT_EQ(ArrivalGaps::Validate(1, std::numeric_limits<double>::infinity()).message(),
            "burstiness: must be finite and > 0");
}

}  // namespace
}  // namespace swiftlet::loadgen
