// Top-p's split of a row's ids: the scalar specification against a plain
// filter of the ids by their weights' bits, and every SIMD twin against
// the scalar one, id for id, in buffers with exactly the documented room.
#include "kernels/split_ids.h"
#include "simd_twin_isas.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

struct SplitResult {
  std::vector<int32_t> above, at;
};

// The split run by `fn` into buffers of n + kSplitIdsSlack ids (AddressSanitizer
// catches a write past them), trimmed to what it kept.
SplitResult RunSplit(SplitIdsFn fn, const std::vector<float>& p, uint32_t lo, uint32_t hi) {
  const auto n = static_cast<int64_t>(p.size());
  SplitResult s;
  s.above.resize(static_cast<size_t>(n + kSplitIdsSlack));
  s.at.resize(static_cast<size_t>(n + kSplitIdsSlack));
  int64_t n_at = -1;
  const int64_t n_above = fn(p.data(), n, lo, hi, s.above.data(), s.at.data(), &n_at);
  EXPECT_GE(n_above, 0);
  EXPECT_GE(n_at, 0);
  s.above.resize(static_cast<size_t>(n_above));
  s.at.resize(static_cast<size_t>(n_at));
  return s;
}

// Weights as top-p sees them: in [0, 1], many far below the largest, some
// 0; `ties` repeats a few values so that many fall on a bucket's edges.
std::vector<float> TopPWeights(std::mt19937& rng, int64_t n, bool ties) {
  std::exponential_distribution<float> below_max(0.4f);
  std::vector<float> p(static_cast<size_t>(n));
  for (float& v : p) v = std::exp(-below_max(rng));
  for (int64_t i = 0; i < n; i += 5) p[static_cast<size_t>(i)] = 0.0f;
  if (ties) {
    for (int64_t i = 1; i < n; i += 3) p[static_cast<size_t>(i)] = i % 2 ? 0.5f : 0.25f;
  }
  if (n > 0) p[static_cast<size_t>(rng() % n)] = 1.0f;
  return p;
}

// Bounds around a bucket of TopPBucket's kind (bits 19 and up), including
// the ends: nothing below, the last bucket open above, an empty range.
std::vector<std::pair<uint32_t, uint32_t>> BucketBounds(std::mt19937& rng) {
  std::vector<std::pair<uint32_t, uint32_t>> b = {{0, 1u << 19},
                                                  {0x3f000000u, 0x3f080000u},  // 0.5 starts its bucket
                                                  {0x3f800000u, std::numeric_limits<uint32_t>::max()},
                                                  {0x3e800000u, 0x3e800000u},
                                                  {0, 0}};
  for (int k = 0; k < 4; ++k) {
    const uint32_t bucket = static_cast<uint32_t>(rng() % 0x7f0);
    b.push_back({bucket << 19, (bucket + 1) << 19});
  }
  return b;
}

TEST(SplitIdsTest, ScalarKeepsTheIdsAboveAndInTheRangeInIdOrder) {
  std::mt19937 rng(41);
  for (int64_t n : {0, 1, 7, 16, 100, 4099}) {
    for (bool ties : {false, true}) {
      const std::vector<float> p = TopPWeights(rng, n, ties);
      for (auto [lo, hi] : BucketBounds(rng)) {
        SplitResult want;
        for (int64_t i = 0; i < n; ++i) {
          const uint32_t bits = std::bit_cast<uint32_t>(p[static_cast<size_t>(i)]);
          if (bits >= hi) want.above.push_back(static_cast<int32_t>(i));
          if (bits >= lo && bits < hi) want.at.push_back(static_cast<int32_t>(i));
        }
        const SplitResult got = RunSplit(SplitIdsScalar, p, lo, hi);
        EXPECT_EQ(got.above, want.above) << "n " << n << " lo " << lo << " hi " << hi;
        EXPECT_EQ(got.at, want.at) << "n " << n << " lo " << lo << " hi " << hi;
      }
    }
  }
}

TEST(SplitIdsTest, EverySimdTwinKeepsTheScalarsIds) {
  std::mt19937 rng(42);
  int checked = 0;
  for (KernelIsa isa : SimdTwinIsasOnThisCpu()) {
    const SplitIdsFn fn = SplitIdsFor(isa);
    std::vector<int64_t> lengths;
    for (int64_t n = 0; n <= 70; ++n) lengths.push_back(n);  // every tail, every lane
    for (int64_t n : {1001, 32000, 151936}) lengths.push_back(n);
    for (int64_t n : lengths) {
      for (bool ties : {false, true}) {
        const std::vector<float> p = TopPWeights(rng, n, ties);
        for (auto [lo, hi] : BucketBounds(rng)) {
          const SplitResult want = RunSplit(SplitIdsScalar, p, lo, hi);
          const SplitResult got = RunSplit(fn, p, lo, hi);
          ASSERT_EQ(got.above, want.above) << KernelIsaName(isa) << " n " << n << " lo " << lo << " hi " << hi;
          ASSERT_EQ(got.at, want.at) << KernelIsaName(isa) << " n " << n << " lo " << lo << " hi " << hi;
          ++checked;
        }
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no SIMD twin on this CPU";
}

}  // namespace
}  // namespace swiftlet
