#include "core/duration.h"

#include <gtest/gtest.h>

namespace swiftlet {
namespace {

TEST(DurationTest, ParsesUnits) {
  EXPECT_EQ(*ParseDuration("500ms"), 500'000'000);
  EXPECT_EQ(*ParseDuration("2s"), 2'000'000'000);
  EXPECT_EQ(*ParseDuration("1.5s"), 1'500'000'000);
  EXPECT_EQ(*ParseDuration("250us"), 250'000);
  EXPECT_EQ(*ParseDuration("7ns"), 7);
  EXPECT_EQ(*ParseDuration("2m"), 120'000'000'000);
  EXPECT_EQ(*ParseDuration("1m30s"), 90'000'000'000);
  EXPECT_EQ(*ParseDuration("5h"), int64_t{5} * 3600 * 1'000'000'000);
  EXPECT_EQ(*ParseDuration("24h"), int64_t{24} * 3600 * 1'000'000'000);
}

TEST(DurationTest, RejectsWithTheText) {
  for (const char* bad : {"", "ms", "5", "-1s", "0s", "1e3ms", "25h", "1.2.3s", "100000m", "inf", "5 s", "1x"}) {
    auto d = ParseDuration(bad);
    EXPECT_FALSE(d.ok()) << bad;
    if (!d.ok()) {
      EXPECT_NE(d.status().message().find("duration"), std::string_view::npos);
    }
  }
}

TEST(DurationTest, ParsesTargetLists) {
  auto l = ParseDurationList("ttft=500ms,tpot=100ms", {"ttft", "tpot", "e2e"});
  ASSERT_TRUE(l.ok());
  ASSERT_EQ(l->size(), 2u);
  EXPECT_EQ((*l)[0].first, "ttft");
  EXPECT_EQ((*l)[0].second, 500'000'000);
  EXPECT_EQ((*l)[1].second, 100'000'000);
  EXPECT_FALSE(ParseDurationList("ttft=1s,ttft=2s", {"ttft"}).ok());
  EXPECT_FALSE(ParseDurationList("tpt=1s", {"ttft"}).ok());
  EXPECT_FALSE(ParseDurationList("ttft", {"ttft"}).ok());
  EXPECT_TRUE(ParseDurationList("", {"ttft"})->empty());
}

}  // namespace
}  // namespace swiftlet
