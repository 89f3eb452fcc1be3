// Line charts as inline SVG for the plan's HTML report: named series on
// linear axes from zero, round-numbered ticks, a legend, and dashed
// reference lines (a latency target, the chosen batch). Plain markup: no
// scripts, no external references.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace swiftlet::plan {

struct SvgSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite ones are skipped.
};

struct SvgReference {
  double value = 0;
  std::string label;
};

struct SvgChartSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  std::vector<SvgReference> horizontal;  // y = value
  std::vector<SvgReference> vertical;    // x = value
};

std::string SvgLineChart(const SvgChartSpec& spec, const std::vector<SvgSeries>& series);

// Text safe inside XML/HTML content and attribute values.
std::string XmlEscape(const std::string& text);

// A tick step of 1, 2 or 5 x 10^k near span / ticks (span > 0).
double TickStep(double span, int ticks);

}  // namespace swiftlet::plan
