// OpenLoopSchedule: one source matches ArrivalGaps drawn by hand; several
// streams merge in time order and keep the total rate; fan-out repeats an
// instant; the count and duration limits cut where they say.
#include "loadgen/arrival_schedule.h"

#include <algorithm>
#include <cmath>

#include "loadgen/arrivals.h"
#include "core/clock.h"
#include "gtest/gtest.h"

namespace swiftlet::loadgen {
namespace {

TEST(ArrivalScheduleTest, OneSourceIsTheCumulatedGaps) {
  ScheduleOptions o;
  o.rate_per_s = 5;
  o.burstiness = 2;
  o.max_requests = 50;
  o.seed = 9;
  const auto schedule = OpenLoopSchedule(o);
  ASSERT_TRUE(schedule.ok());
  ArrivalGaps gaps(5, 2, 9);
  int64_t at = 0;
  ASSERT_EQ(schedule->size(), 50u);
  for (int64_t offset : *schedule) {
    at += gaps.NextNs();
    EXPECT_EQ(offset, at);
  }
}

TEST(ArrivalScheduleTest, StreamsMergeAndKeepTheRate) {
  ScheduleOptions o;
  o.rate_per_s = 20;
  o.streams = 7;
  o.fan_out = 4;
  o.duration_ns = 200 * kNsPerSecond;
  const auto s = OpenLoopSchedule(o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(std::is_sorted(s->begin(), s->end()));
  // 20 req/s for 200 s: 4000 expected; the count of a Poisson process has
  // sd sqrt(1000) comments * 4, about 126 requests.
  EXPECT_NEAR(static_cast<double>(s->size()), 4000, 500);
  EXPECT_LT(s->back(), o.duration_ns);
  // Fan-out: requests come in groups of 4 at one instant.
  ASSERT_EQ(s->size() % 4, 0u);
  for (size_t i = 0; i < s->size(); i += 4) {
    EXPECT_EQ((*s)[i], (*s)[i + 3]);
  }
}

TEST(ArrivalScheduleTest, CountLimitCutsAFanOutGroup) {
  ScheduleOptions o;
  o.rate_per_s = 10;
  o.fan_out = 3;
  o.max_requests = 7;
  const auto s = OpenLoopSchedule(o);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->size(), 7u);
  EXPECT_EQ((*s)[5], (*s)[3]);
  EXPECT_NE((*s)[6], (*s)[5]);
}

TEST(ArrivalScheduleTest, BadOptionsAreNamed) {
  ScheduleOptions o;
  o.max_requests = 1;
  o.rate_per_s = 0;
  EXPECT_EQ(OpenLoopSchedule(o).status().message(), "rate: must be finite and > 0");
  o.rate_per_s = 1;
  o.streams = 0;
  EXPECT_EQ(OpenLoopSchedule(o).status().message(), "streams: must be in [1, 100000]");
  o.streams = 1;
  o.max_requests = 0;
  EXPECT_EQ(OpenLoopSchedule(o).status().message(), "give a request count or a duration");
  // A tiny rate cannot overflow the offsets: the schedule just ends.
  o.rate_per_s = 1e-12;
  o.max_requests = 100;
  const auto s = OpenLoopSchedule(o);
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(std::is_sorted(s->begin(), s->end()));
}

}  // namespace
}  // namespace swiftlet::loadgen
