#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/str_cat.h"
#include "plan/planner.h"
#include "plan/presets.h"
#include "plan/svg_chart.h"

namespace swiftlet::plan {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

PlanReport Report(bool feasible = true) {
  PlanInputs in;
  in.model_name = "tinyllama <&> \"x\"";
  in.model = *SizeModelShape(FindModelPreset("tinyllama-1.1b")->shape, "Q8_0");
  auto catalog = ParseCatalog(BuiltInCatalogText(), "built-in");
  in.hardware = *FindHardware(*catalog, "l4");
  in.load.peak_req_s = 40;
  in.slo = {0.5, feasible ? 0.05 : 0.0001, 0};
  in.sites = {{"hk", 0.6}, {"fra", 0.4}};
  in.redundancy = {RedundancyRule::kSpares, 1};
  in.link_mbps = {1000, 100};
  return *MakePlan(in);
}

TEST(ReportTest, TextShowsTheFigures) {
  const PlanReport r = Report();
  const std::string text = FormatPlanText(r);
  EXPECT_THAT(text, HasSubstr("on l4"));
  EXPECT_THAT(text, HasSubstr("22,528 bytes per token"));
  EXPECT_THAT(text, HasSubstr("batch limit 256"));
  EXPECT_THAT(text, HasSubstr("best"));
  EXPECT_THAT(text, HasSubstr(StrCat("at the targets: batch ", r.slo_batch)));
  EXPECT_THAT(text, HasSubstr("hk "));
  EXPECT_THAT(text, HasSubstr("fra "));
  EXPECT_THAT(text, HasSubstr("per 1K tokens"));
  EXPECT_THAT(text, HasSubstr("uncalibrated"));
  const std::string bad = FormatPlanText(Report(false));
  EXPECT_THAT(bad, HasSubstr("NOT FEASIBLE"));
}

TEST(ReportTest, JsonHasEveryFigure) {
  const PlanReport r = Report();
  const nlohmann::json j = nlohmann::json::parse(PlanJson(r));
  EXPECT_EQ(j["kv"]["bytes_per_token"], 22'528);
  EXPECT_EQ(j["model"]["weights_bytes"], r.inputs.model.weights_bytes);
  EXPECT_EQ(j["hardware"]["name"], "l4");
  EXPECT_EQ(j["memory"]["max_concurrency"], r.max_concurrency);
  EXPECT_EQ(j["feasible"], true);
  EXPECT_EQ(j["at_slo"]["batch"], r.slo_batch);
  EXPECT_DOUBLE_EQ(j["at_slo"]["replica_req_s"].get<double>(), r.replica_req_s);
  EXPECT_EQ(j["batches"].size(), r.batches.size());
  EXPECT_EQ(j["sites"].size(), 2u);
  EXPECT_EQ(j["sites"][1]["name"], "fra");
  EXPECT_DOUBLE_EQ(j["sites"][1]["transfer_seconds"].get<double>(), *r.sites[1].transfer_s);
  EXPECT_EQ(j["totals"]["devices"], r.total_devices);
  EXPECT_DOUBLE_EQ(j["totals"]["cost_per_1k_tokens"].get<double>(), *r.cost_per_1k_tokens);
  EXPECT_EQ(j["slo"]["e2e_ms"], nullptr);
  EXPECT_DOUBLE_EQ(j["slo"]["tpot_ms"].get<double>(), 50);
  EXPECT_EQ(j["cost_curve"].size(), 20u);
  const nlohmann::json bad = nlohmann::json::parse(PlanJson(Report(false)));
  EXPECT_EQ(bad["feasible"], false);
  EXPECT_THAT(bad["infeasible_reason"].get<std::string>(), HasSubstr("TPOT"));
  EXPECT_EQ(bad["at_slo"], nullptr);
}

TEST(ReportTest, HtmlIsSelfContained) {
  const std::string html = PlanHtml(Report());
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("TPOT against batch size"));
  EXPECT_THAT(html, HasSubstr("TTFT against batch size"));
  EXPECT_THAT(html, HasSubstr("Cost per 1K tokens against peak load"));
  EXPECT_THAT(html, HasSubstr("<polyline"));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("https://")));
  EXPECT_THAT(html, Not(HasSubstr("src=")));
  EXPECT_THAT(html, Not(HasSubstr("<link")));
  // The only URL is the SVG namespace name.
  size_t at = 0;
  while ((at = html.find("http://", at)) != std::string::npos) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0);
    at += 7;
  }
  // Names are escaped.
  EXPECT_THAT(html, HasSubstr("tinyllama &lt;&amp;&gt; &quot;x&quot;"));
  EXPECT_THAT(html, Not(HasSubstr("tinyllama <&>")));
}

TEST(SvgChartTest, TicksAndEscaping) {
  EXPECT_DOUBLE_EQ(TickStep(100, 5), 20);
  EXPECT_DOUBLE_EQ(TickStep(7, 5), 2);
  EXPECT_DOUBLE_EQ(TickStep(0.3, 6), 0.05);
  EXPECT_EQ(XmlEscape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
  const std::string svg = SvgLineChart({"t <1>", "x", "y", {{5, "target"}}, {}},
                                       {{"s", {{0, 1}, {1, NAN}, {2, 3}}}});
  EXPECT_THAT(svg, HasSubstr("t &lt;1&gt;"));
  EXPECT_THAT(svg, HasSubstr("target"));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  // A target far above the data is named, not drawn to scale.
  const std::string far = SvgLineChart({"t", "x", "y", {{500, "TTFT target"}}, {}}, {{"s", {{1, 10}, {2, 20}}}});
  EXPECT_THAT(far, HasSubstr("TTFT target 500 (above the chart)"));
  EXPECT_THAT(far, Not(HasSubstr("stroke-dasharray=\"5 4\"")));
}

}  // namespace
}  // namespace swiftlet::plan
