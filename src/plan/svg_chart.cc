#include "plan/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/str_cat.h"

namespace swiftlet::plan {
namespace {

constexpr double kWidth = 680;
constexpr double kHeight = 320;
constexpr double kLeft = 70;
constexpr double kRight = 150;  // Room for the legend.
constexpr double kTop = 34;
constexpr double kBottom = 48;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf"};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// A tick label: no trailing zeros ("0.5", "20", "1.25").
std::string TickLabel(double v, double step) {
  int digits = 0;
  while (digits < 6 && std::abs(step * std::pow(10, digits) - std::round(step * std::pow(10, digits))) > 1e-6) {
    ++digits;
  }
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

std::string XmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

double TickStep(double span, int ticks) {
  if (!(span > 0) || ticks < 1) return 1;
  const double raw = span / ticks;
  const double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * power >= raw) return m * power;
  }
  return 10 * power;
}

std::string SvgLineChart(const SvgChartSpec& spec, const std::vector<SvgSeries>& series) {
  double x_max = 0;
  double y_max = 0;
  double x_min = INFINITY;
  for (const SvgSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_min = std::min(x_min, x);
      x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  }
  // A target far above the data would squash the lines against the axis:
  // such a line is named at the top instead of drawn to scale.
  const double data_y_max = y_max;
  std::vector<SvgReference> drawn;
  std::vector<SvgReference> above;
  for (const SvgReference& r : spec.horizontal) {
    if (data_y_max > 0 && r.value > 3 * data_y_max) {
      above.push_back(r);
    } else {
      drawn.push_back(r);
      y_max = std::max(y_max, r.value);
    }
  }
  for (const SvgReference& r : spec.vertical) x_max = std::max(x_max, r.value);
  if (!std::isfinite(x_min) || x_min > 0) x_min = 0;
  if (!(x_max > x_min)) x_max = x_min + 1;
  if (!(y_max > 0)) y_max = 1;
  const double x_step = TickStep(x_max - x_min, 6);
  const double y_step = TickStep(y_max, 5);
  x_max = std::ceil(x_max / x_step) * x_step;
  y_max = std::ceil(y_max * 1.02 / y_step) * y_step;

  const double plot_w = kWidth - kLeft - kRight;
  const double plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - y / y_max * plot_h; };

  std::string svg = StrCat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 ", Num(kWidth), " ", Num(kHeight),
      "\" width=\"", Num(kWidth), "\" height=\"", Num(kHeight), "\" role=\"img\" aria-label=\"",
      XmlEscape(spec.title), "\" font-family=\"sans-serif\" font-size=\"11\">\n");
  svg += StrCat("<text x=\"", Num(kLeft), "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">",
                XmlEscape(spec.title), "</text>\n");
  // Grid and ticks.
  for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
    svg += StrCat("<line x1=\"", Num(kLeft), "\" y1=\"", Num(py(y)), "\" x2=\"", Num(kLeft + plot_w),
                  "\" y2=\"", Num(py(y)), "\" stroke=\"#ddd\"/>", "<text x=\"", Num(kLeft - 6), "\" y=\"",
                  Num(py(y) + 4), "\" text-anchor=\"end\">", TickLabel(y, y_step), "</text>\n");
  }
  for (double x = std::ceil(x_min / x_step) * x_step; x <= x_max + x_step / 2; x += x_step) {
    svg += StrCat("<line x1=\"", Num(px(x)), "\" y1=\"", Num(kTop), "\" x2=\"", Num(px(x)), "\" y2=\"",
                  Num(kTop + plot_h), "\" stroke=\"#eee\"/>", "<text x=\"", Num(px(x)), "\" y=\"",
                  Num(kTop + plot_h + 16), "\" text-anchor=\"middle\">", TickLabel(x, x_step),
                  "</text>\n");
  }
  svg += StrCat("<rect x=\"", Num(kLeft), "\" y=\"", Num(kTop), "\" width=\"", Num(plot_w),
                "\" height=\"", Num(plot_h), "\" fill=\"none\" stroke=\"#888\"/>\n");
  svg += StrCat("<text x=\"", Num(kLeft + plot_w / 2), "\" y=\"", Num(kHeight - 10),
                "\" text-anchor=\"middle\">", XmlEscape(spec.x_label), "</text>\n");
  svg += StrCat("<text transform=\"translate(16 ", Num(kTop + plot_h / 2),
                ") rotate(-90)\" text-anchor=\"middle\">", XmlEscape(spec.y_label), "</text>\n");
  // Reference lines.
  for (const SvgReference& r : drawn) {
    svg += StrCat("<line x1=\"", Num(kLeft), "\" y1=\"", Num(py(r.value)), "\" x2=\"", Num(kLeft + plot_w),
                  "\" y2=\"", Num(py(r.value)), "\" stroke=\"#555\" stroke-dasharray=\"5 4\"/>",
                  "<text x=\"", Num(kLeft + plot_w - 4), "\" y=\"", Num(py(r.value) - 4),
                  "\" text-anchor=\"end\" fill=\"#555\">", XmlEscape(r.label), "</text>\n");
  }
  for (size_t i = 0; i < above.size(); ++i) {
    svg += StrCat("<text x=\"", Num(kLeft + plot_w - 4), "\" y=\"", Num(kTop + 12 + 14 * static_cast<double>(i)),
                  "\" text-anchor=\"end\" fill=\"#555\">", XmlEscape(above[i].label), " ",
                  TickLabel(above[i].value, y_step), " (above the chart)</text>\n");
  }
  for (const SvgReference& r : spec.vertical) {
    svg += StrCat("<line x1=\"", Num(px(r.value)), "\" y1=\"", Num(kTop), "\" x2=\"", Num(px(r.value)),
                  "\" y2=\"", Num(kTop + plot_h), "\" stroke=\"#555\" stroke-dasharray=\"2 3\"/>",
                  "<text x=\"", Num(px(r.value) + 4), "\" y=\"", Num(kTop + 12), "\" fill=\"#555\">",
                  XmlEscape(r.label), "</text>\n");
  }
  // Series and legend.
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kColors[i % (sizeof(kColors) / sizeof(kColors[0]))];
    std::string path;
    for (const auto& [x, y] : series[i].points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      path += StrCat(path.empty() ? "" : " ", Num(px(x)), ",", Num(py(std::min(y, y_max))));
    }
    if (!path.empty()) {
      svg += StrCat("<polyline fill=\"none\" stroke=\"", color, "\" stroke-width=\"2\" points=\"", path,
                    "\"/>\n");
    }
    const double ly = kTop + 8 + 18 * static_cast<double>(i);
    svg += StrCat("<line x1=\"", Num(kWidth - kRight + 12), "\" y1=\"", Num(ly), "\" x2=\"",
                  Num(kWidth - kRight + 32), "\" y2=\"", Num(ly), "\" stroke=\"", color,
                  "\" stroke-width=\"2\"/><text x=\"", Num(kWidth - kRight + 38), "\" y=\"",
                  Num(ly + 4), "\">", XmlEscape(series[i].name), "</text>\n");
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace swiftlet::plan
