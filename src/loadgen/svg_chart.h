// A small SVG chart writer for the HTML report: lines or dots of several
// named series on linear axes with round-numbered ticks, a legend, and an
// optional reference line (a latency target). Output is plain
// SVG markup, valid inside HTML, with no scripts or external references.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace swiftlet::loadgen {

struct ChartSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y); non-finite ones are skipped.
};

struct ChartSpec {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool dots = false;          // Dots instead of lines (a scatter).
  // Reference lines, drawn when > 0: horizontal at reference_y, vertical at
  // reference_x, labelled reference_label.
  double reference_y = 0;
  double reference_x = 0;
  std::string reference_label;
};

std::string SvgChart(const ChartSpec& spec, const std::vector<ChartSeries>& series);

// Text escaped for XML/HTML content and attribute values.
std::string EscapeXml(const std::string& text);

// The `step` of 1, 2 or 5 times a power of ten closest above span / target_ticks.
double NiceStep(double span, int target_ticks);

}  // namespace swiftlet::loadgen
