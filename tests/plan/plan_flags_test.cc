#include "plan/plan_flags.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace swiftlet::plan {
namespace {

using ::testing::HasSubstr;

TEST(SloFlagTest, Parses) {
  auto slo = ParseSlo("ttft=500ms,tpot=100ms");
  ASSERT_TRUE(slo.ok());
  EXPECT_DOUBLE_EQ(slo->ttft, 0.5);
  EXPECT_DOUBLE_EQ(slo->tpot, 0.1);
  EXPECT_EQ(slo->e2e, 0);
  EXPECT_DOUBLE_EQ(ParseSlo("e2e=1.5s")->e2e, 1.5);
  EXPECT_THAT(ParseSlo("ttft=fast").status().message(), HasSubstr("--slo"));
  EXPECT_THAT(ParseSlo("itl=5ms").status().message(), HasSubstr("--slo"));
  EXPECT_FALSE(ParseSlo("ttft=1s,ttft=2s").ok());
}

TEST(SitesFlagTest, Parses) {
  auto sites = ParseSites("hk:0.5,sg:0.3,fra:0.2");
  ASSERT_TRUE(sites.ok()) << sites.status();
  ASSERT_EQ(sites->size(), 3u);
  EXPECT_EQ((*sites)[2].name, "fra");
  EXPECT_DOUBLE_EQ((*sites)[1].share, 0.3);
  auto one = ParseSites("");
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->size(), 1u);
  EXPECT_EQ((*one)[0].share, 1);
}

TEST(SitesFlagTest, Rejects) {
  EXPECT_THAT(ParseSites("hk:0.5,sg:0.3").status().message(), HasSubstr("sum to 0.8"));
  EXPECT_THAT(ParseSites("hk:0.5,hk:0.5").status().message(), HasSubstr("twice"));
  EXPECT_THAT(ParseSites("hk").status().message(), HasSubstr("NAME:VALUE"));
  EXPECT_THAT(ParseSites("hk:").status().message(), HasSubstr("NAME:VALUE"));
  EXPECT_THAT(ParseSites("hk:half,sg:0.5").status().message(), HasSubstr("not a number"));
  EXPECT_THAT(ParseSites("hk:-0.5,sg:1.5").status().message(), HasSubstr("outside"));
  EXPECT_THAT(ParseSites("h k:1").status().message(), HasSubstr("letters"));
  EXPECT_THAT(ParseSites("hk:nan").status().message(), HasSubstr("not a number"));
  std::string many;
  for (int i = 0; i < 100; ++i) many += "s" + std::to_string(i) + ":0.01,";
  many.pop_back();
  EXPECT_THAT(ParseSites(many).status().message(), HasSubstr("more than"));
}

TEST(RedundancyFlagTest, Parses) {
  EXPECT_EQ(ParseRedundancy("n")->rule, RedundancyRule::kNone);
  EXPECT_EQ(ParseRedundancy("n+1")->spares, 1);
  EXPECT_EQ(ParseRedundancy("n+2")->rule, RedundancyRule::kSpares);
  EXPECT_EQ(ParseRedundancy("2n")->rule, RedundancyRule::kDouble);
  for (const char* bad : {"", "n+", "n+-1", "n+x", "3n", "n+100000", "n+1.5"}) {
    EXPECT_THAT(ParseRedundancy(bad).status().message(), HasSubstr("--redundancy")) << bad;
  }
}

TEST(LinkFlagTest, OneFigureOrOnePerSite) {
  const std::vector<Site> sites = *ParseSites("hk:0.5,sg:0.5");
  EXPECT_EQ(*ParseLinkMbps("1000", sites), (std::vector<double>{1000, 1000}));
  EXPECT_EQ(*ParseLinkMbps("sg:200,hk:1000", sites), (std::vector<double>{1000, 200}));
  EXPECT_THAT(ParseLinkMbps("hk:1000", sites).status().message(), HasSubstr("no speed for site 'sg'"));
  EXPECT_THAT(ParseLinkMbps("hk:1000,sg:1,fra:5", sites).status().message(), HasSubstr("'fra'"));
  EXPECT_THAT(ParseLinkMbps("0", sites).status().message(), HasSubstr("outside"));
  EXPECT_THAT(ParseLinkMbps("fast", sites).status().message(), HasSubstr("not a number"));
  EXPECT_THAT(ParseLinkMbps("1e99", sites).status().message(), HasSubstr("outside"));
}

TEST(EfficiencyFlagTest, Parses) {
  auto e = ParseEfficiency("decode=0.6,serving=0.9");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e->decode, 0.6);
  EXPECT_FALSE(e->prefill.has_value());
  EXPECT_EQ(*e->serving, 0.9);
  EXPECT_THAT(ParseEfficiency("decode=0").status().message(), HasSubstr("outside"));
  EXPECT_THAT(ParseEfficiency("speed=0.5").status().message(), HasSubstr("not decode"));
  EXPECT_THAT(ParseEfficiency("decode=0.5,decode=0.6").status().message(), HasSubstr("twice"));
}

}  // namespace
}  // namespace swiftlet::plan
