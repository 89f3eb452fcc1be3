// The SVG chart writer: escaping, tick steps, and a chart whose markup
// places points where the axis arithmetic says.
#include "loadgen/svg_chart.h"

#include <cmath>

#include "gtest/gtest.h"

namespace swiftlet::loadgen {
namespace {

TEST(SvgChartTest, EscapesMarkup) {
  EXPECT_EQ(EscapeXml("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
}

TEST(SvgChartTest, NiceStepsAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(NiceStep(10, 5), 2);
  EXPECT_DOUBLE_EQ(NiceStep(7, 5), 2);
  EXPECT_DOUBLE_EQ(NiceStep(450, 5), 100);
  EXPECT_DOUBLE_EQ(NiceStep(0.3, 6), 0.05);
  EXPECT_DOUBLE_EQ(NiceStep(0, 5), 1);
}

TEST(SvgChartTest, PointsLandOnTheAxes) {
  ChartSpec spec;
  spec.title = "t <&>";
  spec.dots = true;
  // x in [0, 10], y in [0, 100]: plot area x 64..490, y 32..312.
  const std::string svg = SvgChart(spec, {{"s", {{0, 0}, {10, 100}, {5, std::nan("")}}}});
  EXPECT_NE(svg.find("<title>t &lt;&amp;&gt;</title>"), std::string::npos);
  EXPECT_NE(svg.find("cx=\"64.0\" cy=\"312.0\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("cx=\"490.0\" cy=\"32.0\""), std::string::npos) << svg;
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  // Balanced root element.
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace swiftlet::loadgen
