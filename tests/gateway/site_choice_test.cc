#include "gateway/site_choice.h"

#include <map>
#include <vector>

#include <gtest/gtest.h>

namespace swiftlet::gateway {
namespace {

// Counts each site's wins over many random values.
std::map<size_t, int> Wins(const std::vector<ScoredSite>& sites, int draws = 4000) {
  std::map<size_t, int> wins;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < draws; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    ++wins[sites[ChooseSite(sites, x)].index];
  }
  return wins;
}

TEST(SiteChoice, TheLowestScoreWinsWhenNoOtherIsNear) {
  const std::vector<ScoredSite> sites = {{0, 50}, {1, 10}, {2, 11.5}};  // 11.5 is 15% over 10.
  auto wins = Wins(sites);
  EXPECT_EQ(wins[1], 4000);
}

TEST(SiteChoice, TwoNearEqualsTheCurrentLowerWins) {
  // 10 and 10.5 are near-equals; two distinct draws of two are always both,
  // and the lower current score wins. Scores carry the in-flight penalty,
  // so as requests pile up on one the other takes over (next test).
  const std::vector<ScoredSite> sites = {{0, 10.5}, {1, 10}, {2, 30}};
  auto wins = Wins(sites);
  EXPECT_EQ(wins[1], 4000);
}

TEST(SiteChoice, InFlightPenaltyHandsOverBetweenNearEquals) {
  // Site 1 is 0.5 ms nearer; five requests in flight there at 5 ms each
  // make site 0 the better one.
  const std::vector<ScoredSite> sites = {{0, 10.5}, {1, 10 + 5 * 5.0}};
  EXPECT_EQ(sites[ChooseSite(sites, 1)].index, 0u);
}

TEST(SiteChoice, ThreeNearEqualsAllGetWork) {
  const std::vector<ScoredSite> sites = {{0, 10}, {1, 10.2}, {2, 10.4}};
  auto wins = Wins(sites, 9000);
  // Two distinct draws of three, the lower wins: the worst never wins; the
  // middle wins the pairs it forms with the worst (a third); the best the
  // rest (two thirds).
  EXPECT_EQ(wins[2], 0);
  EXPECT_GT(wins[1], 2400);
  EXPECT_LT(wins[1], 3600);
  EXPECT_GT(wins[0], 5400);
}

TEST(SiteChoice, OneSiteIsChosen) {
  const std::vector<ScoredSite> one = {{7, 123}};
  EXPECT_EQ(ChooseSite(one, 42), 0u);
}

TEST(SiteChoice, SameRandomSameChoice) {
  const std::vector<ScoredSite> sites = {{0, 10}, {1, 10.1}, {2, 10.2}, {3, 10.3}};
  for (uint64_t r : {0ull, 1ull, 12345ull, ~0ull}) EXPECT_EQ(ChooseSite(sites, r), ChooseSite(sites, r));
}

TEST(SiteChoice, AffinityHoldsWithinTwiceTheBest) {
  EXPECT_TRUE(KeepsAffinity(19.9, 10));
  EXPECT_TRUE(KeepsAffinity(20, 10));
  EXPECT_FALSE(KeepsAffinity(20.5, 10));
  EXPECT_TRUE(KeepsAffinity(10, 10));
}

}  // namespace
}  // namespace swiftlet::gateway
