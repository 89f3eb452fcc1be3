// The health and breaker state machine on scripted times: no clock, no
// sleeping.
#include "gateway/site_health.h"

#include <gtest/gtest.h>

namespace swiftlet::gateway {
namespace {

constexpr int64_t kMs = 1'000'000;
constexpr int64_t kS = 1'000'000'000;

SiteHealth Started(const HealthPolicy& p = {}) {
  SiteHealth h(p);
  h.PollReady(0, 10 * kMs);
  return h;
}

TEST(SiteHealth, NotEligibleUntilItsFirstGoodPoll) {
  SiteHealth h{HealthPolicy{}};
  EXPECT_EQ(h.state(), SiteState::kStarting);
  EXPECT_FALSE(h.Eligible(0));
  h.PollReady(0, 20 * kMs);
  EXPECT_EQ(h.state(), SiteState::kUp);
  EXPECT_TRUE(h.Eligible(0));
  EXPECT_DOUBLE_EQ(h.rtt_ms(), 20);
}

TEST(SiteHealth, EjectsAfterThreeFailuresAndReadmitsAfterTwoSuccesses) {
  SiteHealth h = Started();
  h.PollFailed(1, "x");
  h.PollFailed(2, "x");
  EXPECT_EQ(h.state(), SiteState::kUp);
  h.PollFailed(3, "x");
  EXPECT_EQ(h.state(), SiteState::kEjected);
  EXPECT_EQ(h.ejections(), 1u);
  EXPECT_FALSE(h.Eligible(3));
  h.PollReady(4, kMs);
  EXPECT_EQ(h.state(), SiteState::kEjected);  // One is not enough...
  h.PollFailed(5, "x");
  h.PollReady(6, kMs);
  EXPECT_EQ(h.state(), SiteState::kEjected);  // ...nor two that are not in a row.
  h.PollReady(7, kMs);
  EXPECT_EQ(h.state(), SiteState::kUp);
  EXPECT_EQ(h.ejections(), 1u);
}

TEST(SiteHealth, SuccessResetsTheFailureCount) {
  SiteHealth h = Started();
  h.PollFailed(1, "x");
  h.PollFailed(2, "x");
  h.PollReady(3, kMs);
  h.PollFailed(4, "x");
  h.PollFailed(5, "x");
  EXPECT_EQ(h.state(), SiteState::kUp);
}

TEST(SiteHealth, DrainingGetsNoNewWork) {
  SiteHealth h = Started();
  h.PollDraining(1, kMs);
  EXPECT_EQ(h.state(), SiteState::kDraining);
  EXPECT_FALSE(h.Eligible(1));
  h.PollReady(2, kMs);
  EXPECT_TRUE(h.Eligible(2));
  h.SetPublishedWait(5, /*draining=*/true);  // /load says so too.
  EXPECT_FALSE(h.Eligible(2));
  h.SetPublishedWait(5, false);
  EXPECT_TRUE(h.Eligible(2));
}

TEST(SiteHealth, RttIsAnEwma) {
  HealthPolicy p;
  p.rtt_alpha = 0.5;
  SiteHealth h(p);
  h.PollReady(0, 10 * kMs);
  h.PollReady(1, 20 * kMs);
  EXPECT_DOUBLE_EQ(h.rtt_ms(), 15);
  h.SetPublishedWait(100, false);
  EXPECT_DOUBLE_EQ(h.ScoreMs(2), 15 + 100 + 2 * p.in_flight_penalty_ms);
}

TEST(SiteHealth, AFreshConnectionsRttOnlyStandsIn) {
  SiteHealth h{HealthPolicy{}};
  h.PollReady(0, 90 * kMs, /*fresh_connection=*/true);  // Connect + cold path.
  EXPECT_TRUE(h.Eligible(0));
  EXPECT_DOUBLE_EQ(h.rtt_ms(), 90);
  h.PollReady(1, 10 * kMs);  // Replaces it, not averaged in.
  EXPECT_DOUBLE_EQ(h.rtt_ms(), 10);
  h.PollReady(2, 500 * kMs, /*fresh_connection=*/true);  // A reconnect later: ignored.
  EXPECT_DOUBLE_EQ(h.rtt_ms(), 10);
}

TEST(SiteHealth, RetryAfterBenchesForThatLong) {
  SiteHealth h = Started();
  h.RetryAfter(kS, 2 * kS);
  EXPECT_FALSE(h.Eligible(kS));
  EXPECT_FALSE(h.Eligible(3 * kS - 1));
  EXPECT_TRUE(h.Eligible(3 * kS));
  h.RetryAfter(10 * kS, 3600 * kS);  // Cut to the policy's maximum.
  EXPECT_EQ(h.retry_after_left_ns(10 * kS), HealthPolicy{}.max_retry_after_ns);
}

TEST(SiteHealth, AFinishedRequestEndsTheBench) {
  SiteHealth h = Started();
  h.RetryAfter(kS, 10 * kS);
  h.RequestSucceeded(2 * kS);  // Another 429 (no slot freed): still benched.
  EXPECT_FALSE(h.Eligible(2 * kS));
  h.RequestSucceeded(3 * kS, /*freed_slot=*/true);
  EXPECT_TRUE(h.Eligible(3 * kS));
}

TEST(SiteHealth, BreakerOpensAfterFailuresInARow) {
  SiteHealth h = Started();
  for (int i = 0; i < 2; ++i) {
    h.Chosen(kS);
    h.RequestFailed(kS, "refused");
  }
  EXPECT_EQ(h.breaker(kS), BreakerState::kClosed);
  h.Chosen(kS);
  h.RequestSucceeded(kS);  // A success in between resets the count.
  for (int i = 0; i < 3; ++i) {
    h.Chosen(kS);
    h.RequestFailed(kS, "refused");
  }
  EXPECT_EQ(h.breaker(kS), BreakerState::kOpen);
  EXPECT_FALSE(h.Eligible(kS));
  EXPECT_EQ(h.breaker_trips(), 1u);
}

TEST(SiteHealth, OpenBreakerNeedsTimeAndAGoodPollThenOneTrial) {
  HealthPolicy p;
  p.breaker_open_ns = 5 * kS;
  SiteHealth h = Started(p);
  for (int i = 0; i < 3; ++i) h.RequestFailed(kS, "refused");
  // Time alone does not half-open it: a dead site gets no live traffic.
  EXPECT_EQ(h.breaker(100 * kS), BreakerState::kOpen);
  h.PollReady(2 * kS, kMs);  // A good poll, but the open time has not passed yet.
  EXPECT_EQ(h.breaker(3 * kS), BreakerState::kOpen);
  EXPECT_EQ(h.breaker(6 * kS), BreakerState::kHalfOpen);
  EXPECT_TRUE(h.Eligible(6 * kS));
  h.Chosen(6 * kS);  // The one trial.
  EXPECT_FALSE(h.Eligible(6 * kS));
  h.RequestFailed(7 * kS, "again");
  EXPECT_EQ(h.breaker(7 * kS), BreakerState::kOpen);
  h.PollReady(8 * kS, kMs);
  EXPECT_EQ(h.breaker(12 * kS), BreakerState::kHalfOpen);
  h.Chosen(12 * kS);
  h.RequestSucceeded(12 * kS);
  EXPECT_EQ(h.breaker(12 * kS), BreakerState::kClosed);
  EXPECT_TRUE(h.Eligible(12 * kS));
}

TEST(SiteHealth, AnAbandonedTrialFreesTheSlot) {
  HealthPolicy p;
  p.breaker_open_ns = kS;
  SiteHealth h = Started(p);
  for (int i = 0; i < 3; ++i) h.RequestFailed(0, "refused");
  h.PollReady(2 * kS, kMs);
  h.Chosen(2 * kS);
  EXPECT_FALSE(h.Eligible(2 * kS));
  h.RequestAbandoned();
  EXPECT_TRUE(h.Eligible(2 * kS));
}

TEST(SiteHealth, ErrorsAreKeptShort) {
  SiteHealth h = Started();
  h.PollFailed(1, std::string(10'000, 'e'));
  EXPECT_LE(h.last_error().size(), 200u);
}

}  // namespace
}  // namespace swiftlet::gateway
