#include "loadgen/svg_chart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace swiftlet::loadgen {
namespace {

constexpr double kWidth = 640, kHeight = 360;
constexpr double kLeft = 64, kRight = 150, kTop = 32, kBottom = 48;
constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                   "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string Px(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string EscapeXml(const std::string& text) {
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

double NiceStep(double span, int target_ticks) {
  if (!(span > 0) || !std::isfinite(span)) return 1;
  const double raw = span / std::max(1, target_ticks);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

std::string SvgChart(const ChartSpec& spec, const std::vector<ChartSeries>& series) {
  // Axes from the data, always including 0 (every quantity here is >= 0).
  double x_max = 0, y_max = spec.reference_y > 0 ? spec.reference_y : 0;
  double x_min = 0;
  if (spec.reference_x > 0) x_max = spec.reference_x;
  bool any = false;
  for (const ChartSeries& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      x_max = std::max(x_max, x);
      x_min = any ? std::min(x_min, x) : std::min(0.0, x);
      y_max = std::max(y_max, y);
      any = true;
    }
  }
  if (x_max <= x_min) x_max = x_min + 1;
  if (y_max <= 0) y_max = 1;
  const double x_step = NiceStep(x_max - x_min, 6), y_step = NiceStep(y_max, 5);
  x_max = std::ceil(x_max / x_step) * x_step;
  x_min = std::floor(x_min / x_step) * x_step;
  y_max = std::ceil(y_max / y_step) * y_step;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + (x - x_min) / (x_max - x_min) * plot_w; };
  auto py = [&](double y) { return kTop + plot_h - y / y_max * plot_h; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + Px(kWidth) +
                    "\" height=\"" + Px(kHeight) + "\" viewBox=\"0 0 " + Px(kWidth) + " " +
                    Px(kHeight) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<title>" + EscapeXml(spec.title) + "</title>\n";
  svg += "<text x=\"" + Px(kLeft) + "\" y=\"18\" font-size=\"13\" font-weight=\"bold\">" +
         EscapeXml(spec.title) + "</text>\n";
  // Grid and ticks.
  for (double y = 0; y <= y_max + y_step / 2; y += y_step) {
    svg += "<line x1=\"" + Px(kLeft) + "\" y1=\"" + Px(py(y)) + "\" x2=\"" + Px(kLeft + plot_w) +
           "\" y2=\"" + Px(py(y)) + "\" stroke=\"#ddd\"/>";
    svg += "<text x=\"" + Px(kLeft - 6) + "\" y=\"" + Px(py(y) + 4) + "\" text-anchor=\"end\">" +
           Num(y) + "</text>\n";
  }
  for (double x = x_min; x <= x_max + x_step / 2; x += x_step) {
    svg += "<line x1=\"" + Px(px(x)) + "\" y1=\"" + Px(kTop + plot_h) + "\" x2=\"" + Px(px(x)) +
           "\" y2=\"" + Px(kTop + plot_h + 4) + "\" stroke=\"#333\"/>";
    svg += "<text x=\"" + Px(px(x)) + "\" y=\"" + Px(kTop + plot_h + 16) +
           "\" text-anchor=\"middle\">" + Num(x) + "</text>\n";
  }
  svg += "<rect x=\"" + Px(kLeft) + "\" y=\"" + Px(kTop) + "\" width=\"" + Px(plot_w) +
         "\" height=\"" + Px(plot_h) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  svg += "<text x=\"" + Px(kLeft + plot_w / 2) + "\" y=\"" + Px(kHeight - 8) +
         "\" text-anchor=\"middle\">" + EscapeXml(spec.x_label) + "</text>\n";
  svg += "<text transform=\"translate(14," + Px(kTop + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">" + EscapeXml(spec.y_label) + "</text>\n";
  if (spec.reference_y > 0) {
    svg += "<line x1=\"" + Px(kLeft) + "\" y1=\"" + Px(py(spec.reference_y)) + "\" x2=\"" +
           Px(kLeft + plot_w) + "\" y2=\"" + Px(py(spec.reference_y)) +
           "\" stroke=\"#000\" stroke-dasharray=\"6 4\"/>";
    svg += "<text x=\"" + Px(kLeft + plot_w - 4) + "\" y=\"" + Px(py(spec.reference_y) - 4) +
           "\" text-anchor=\"end\">" + EscapeXml(spec.reference_label) + "</text>\n";
  }
  if (spec.reference_x > 0) {
    svg += "<line x1=\"" + Px(px(spec.reference_x)) + "\" y1=\"" + Px(kTop) + "\" x2=\"" +
           Px(px(spec.reference_x)) + "\" y2=\"" + Px(kTop + plot_h) +
           "\" stroke=\"#000\" stroke-dasharray=\"6 4\"/>";
    svg += "<text x=\"" + Px(px(spec.reference_x) - 4) + "\" y=\"" + Px(kTop + 12) +
           "\" text-anchor=\"end\">" +
           EscapeXml(spec.reference_label) + "</text>\n";
  }
  // Series and legend.
  for (size_t i = 0; i < series.size(); ++i) {
    const std::string color = kColors[i % std::size(kColors)];
    std::string path;
    for (const auto& [x, y] : series[i].points) {
      if (!std::isfinite(x) || !std::isfinite(y)) continue;
      if (spec.dots) {
        svg += "<circle cx=\"" + Px(px(x)) + "\" cy=\"" + Px(py(y)) + "\" r=\"2\" fill=\"" +
               color + "\"/>";
      } else {
        path += (path.empty() ? "M" : " L") + Px(px(x)) + " " + Px(py(y));
      }
    }
    if (!path.empty()) {
      svg += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + color +
             "\" stroke-width=\"1.5\"/>";
    }
    const double ly = kTop + 8 + static_cast<double>(i) * 16;
    svg += "\n<rect x=\"" + Px(kWidth - kRight + 12) + "\" y=\"" + Px(ly - 8) +
           "\" width=\"10\" height=\"10\" fill=\"" + color + "\"/><text x=\"" +
           Px(kWidth - kRight + 26) + "\" y=\"" + Px(ly + 1) + "\">" +
           EscapeXml(series[i].name) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace swiftlet::loadgen
