// Top-k's search for the next logit above a bar: the scalar specification
// against std::find_if, and every SIMD twin against it from every start,
// with NaN, infinities, ties with the bar and both zeros.
#include "kernels/next_above.h"
#include "simd_twin_isas.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Logits with few above a high bar, NaN and infinities among them, and
// values equal to the bars the tests use.
std::vector<float> RowForTopK(std::mt19937& rng, int64_t n) {
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = normal(rng);
  for (int64_t i = 0; i < n; ++i) {
    switch (rng() % 23) {
      case 0: x[static_cast<size_t>(i)] = kNaN; break;
      case 1: x[static_cast<size_t>(i)] = -kInf; break;
      case 2: x[static_cast<size_t>(i)] = 3.0f; break;  // a tie with a bar
      case 3: x[static_cast<size_t>(i)] = -0.0f; break;
      case 4: x[static_cast<size_t>(i)] = 0.0f; break;
      default: break;
    }
  }
  return x;
}

const float kBars[] = {-kInf, -1.0f, -0.0f, 0.0f, 3.0f, 5.5f, kInf};

TEST(NextAboveTest, ScalarFindsTheFirstIdAboveTheBarFromBegin) {
  std::mt19937 rng(51);
  const std::vector<float> x = RowForTopK(rng, 300);
  for (float bar : kBars) {
    for (int64_t begin = 0; begin <= 300; begin += 7) {
      const auto want = std::find_if(x.begin() + begin, x.end(), [bar](float v) { return v > bar; }) - x.begin();
      ASSERT_EQ(NextAboveScalar(x.data(), begin, 300, bar), want) << "bar " << bar << " begin " << begin;
    }
  }
  // Nothing is above +inf; NaN never is; an empty range gives its end.
  const std::vector<float> odd = {kNaN, kInf, kNaN};
  EXPECT_EQ(NextAboveScalar(odd.data(), 0, 3, kInf), 3);
  EXPECT_EQ(NextAboveScalar(odd.data(), 0, 3, 1.0f), 1);
  EXPECT_EQ(NextAboveScalar(odd.data(), 2, 2, 1.0f), 2);
}

TEST(NextAboveTest, EverySimdTwinFindsTheScalarsId) {
  std::mt19937 rng(52);
  int checked = 0;
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const NextAboveFn fn = NextAboveFor(isa);
    for (int64_t n : {0, 1, 15, 16, 17, 33, 100, 1000}) {
      const std::vector<float> x = RowForTopK(rng, n);
      for (float bar : kBars) {
        // Every start (every alignment against the vectors), and the whole
        // walk a top-k scan makes: from each hit to the next.
        for (int64_t begin = 0; begin <= n; ++begin) {
          ASSERT_EQ(fn(x.data(), begin, n, bar), NextAboveScalar(x.data(), begin, n, bar))
              << KernelIsaName(isa) << " n " << n << " bar " << bar << " begin " << begin;
        }
        ++checked;
      }
    }
    // A row of 151,936 with a rising bar, as top-k raises its worst kept.
    const std::vector<float> big = RowForTopK(rng, 151936);
    float bar = 4.0f;
    for (int64_t from = 0;;) {
      const int64_t got = fn(big.data(), from, 151936, bar);
      ASSERT_EQ(got, NextAboveScalar(big.data(), from, 151936, bar)) << KernelIsaName(isa) << " from " << from;
      if (got == 151936) break;
      bar = std::max(bar, big[static_cast<size_t>(got)] - 0.5f);
      from = got + 1;
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD twin on this CPU";
}

}  // namespace
}  // namespace swiftlet
