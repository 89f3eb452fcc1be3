#include "loadgen/comment_report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

#include "core/number_format.h"
#include "core/str_cat.h"
#include "loadgen/svg_chart.h"

namespace swiftlet::loadgen {
namespace {

std::string MsText(double ns) { return Fixed(ns / 1e6, 0); }

nlohmann::json LatencyJson(const LatencySummary& s) {
  return {{"count", s.count}, {"mean_ms", s.mean_ns / 1e6}, {"p50_ms", s.p50_ns / 1e6}, {"p95_ms", s.p95_ns / 1e6},
          {"p99_ms", s.p99_ns / 1e6}, {"max_ms", s.max_ns / 1e6}};
}

std::string Languages(const std::vector<std::string>& l) {
  std::string out;
  for (const auto& x : l) out += (out.empty() ? "" : ",") + x;
  return out;
}

}  // namespace

std::string FormatCommentPoint(const CommentSweepParameters& p, const CommentPoint& point) {
  const CommentReport& r = point.report;
  return StrCat("\n", p.transport, ", ", p.streams, " streams x ", Fixed(point.comment_rate, 2),
                " comments/s, ", p.languages.size(), " languages, budget ", p.budget_ms, " ms\n",
                "  comments      ", r.offered, " offered (", Fixed(r.offered_per_s, 2), "/s), ", r.answered,
                " answered, ", r.within_budget, " delivered within budget (", Fixed(r.within_budget_per_s, 2),
                "/s)\n",
                "  translations  ", r.items, ": ", r.items_dropped, " dropped, ", r.items_refused, " refused, ",
                r.items_failed, " failed (", Fixed(r.drop_rate_pct, 1), "% not delivered)\n",
                "  all K in      p50 ", MsText(r.latency.p50_ns), " ms, p95 ", MsText(r.latency.p95_ns), " ms, p99 ",
                MsText(r.latency.p99_ns), " ms (", r.latency.count, " comments with every language)\n");
}

std::string FormatCommentTable(const CommentSweepParameters& p, const std::vector<CommentPoint>& points) {
  std::string out = StrCat("transport ", p.transport, ", ", p.streams, " streams, ", p.languages.size(),
                           " languages, budget ", p.budget_ms, " ms\n",
                           "rate/stream  offered/s  in-budget/s  not-delivered  p50 ms  p95 ms  p99 ms\n");
  for (const CommentPoint& pt : points) {
    const CommentReport& r = pt.report;
    char line[200];
    std::snprintf(line, sizeof line, "%11.2f  %9.2f  %11.2f  %12.1f%%  %6s  %6s  %6s\n", pt.comment_rate,
                  r.offered_per_s, r.within_budget_per_s, r.drop_rate_pct, MsText(r.latency.p50_ns).c_str(),
                  MsText(r.latency.p95_ns).c_str(), MsText(r.latency.p99_ns).c_str());
    out += line;
  }
  return out;
}

std::string CommentReportJson(const CommentSweepParameters& p, const std::vector<CommentPoint>& points) {
  nlohmann::json pts = nlohmann::json::array();
  for (const CommentPoint& pt : points) {
    const CommentReport& r = pt.report;
    pts.push_back({{"comment_rate_per_stream", pt.comment_rate},
                   {"offered", r.offered},
                   {"answered", r.answered},
                   {"within_budget", r.within_budget},
                   {"offered_per_s", r.offered_per_s},
                   {"within_budget_per_s", r.within_budget_per_s},
                   {"items", r.items},
                   {"items_dropped", r.items_dropped},
                   {"items_refused", r.items_refused},
                   {"items_failed", r.items_failed},
                   {"not_delivered_pct", r.drop_rate_pct},
                   {"duration_s", r.duration_s},
                   {"all_languages_latency", LatencyJson(r.latency)}});
  }
  nlohmann::json j = {{"kind", "live-comments"},
                      {"parameters",
                       {{"url", p.url},
                        {"model", p.model},
                        {"transport", p.transport},
                        {"languages", p.languages},
                        {"streams", p.streams},
                        {"budget_ms", p.budget_ms},
                        {"output_tokens", p.output_tokens},
                        {"started_utc", p.started_utc},
                        {"client_machine", p.client_machine}}},
                      {"points", std::move(pts)}};
  return j.dump(2) + "\n";
}

std::string CommentReportHtml(const CommentSweepParameters& p, const std::vector<CommentPoint>& points) {
  ChartSeries offered{"offered comments/s", {}}, delivered{"delivered within budget/s", {}};
  ChartSeries p50{"p50", {}}, p95{"p95", {}}, p99{"p99", {}};
  for (const CommentPoint& pt : points) {
    const double x = pt.report.offered_per_s;
    offered.points.emplace_back(x, pt.report.offered_per_s);
    delivered.points.emplace_back(x, pt.report.within_budget_per_s);
    p50.points.emplace_back(x, pt.report.latency.p50_ns / 1e6);
    p95.points.emplace_back(x, pt.report.latency.p95_ns / 1e6);
    p99.points.emplace_back(x, pt.report.latency.p99_ns / 1e6);
  }
  ChartSpec throughput{"Comments delivered within budget", "offered comments/s", "comments/s", false, 0, 0, ""};
  ChartSpec latency{"Time until every language arrived", "offered comments/s", "ms", false,
                    static_cast<double>(p.budget_ms), 0, "budget"};
  std::string rows;
  for (const CommentPoint& pt : points) {
    const CommentReport& r = pt.report;
    rows += StrCat("<tr><td>", Fixed(pt.comment_rate, 2), "</td><td>", Fixed(r.offered_per_s, 2), "</td><td>",
                   Fixed(r.within_budget_per_s, 2), "</td><td>", Fixed(r.drop_rate_pct, 1), "%</td><td>",
                   MsText(r.latency.p50_ns), "</td><td>", MsText(r.latency.p95_ns), "</td><td>", MsText(r.latency.p99_ns),
                   "</td></tr>\n");
  }
  return StrCat(
      "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>swiftlet bench: live comments</title>\n"
      "<style>body{font-family:sans-serif;margin:2em;max-width:1000px}table{border-collapse:collapse}"
      "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}</style></head><body>\n",
      "<h1>Live translation load</h1>\n<p>", EscapeXml(p.url), ", model ", EscapeXml(p.model), ", transport <b>",
      EscapeXml(p.transport), "</b>, ", p.streams, " streams, languages ", EscapeXml(Languages(p.languages)),
      ", budget ", p.budget_ms, " ms, ", p.output_tokens, " output tokens per language; started ",
      EscapeXml(p.started_utc), "; client ", EscapeXml(p.client_machine), "</p>\n",
      "<table><tr><th>comments/s per stream</th><th>offered/s</th><th>within budget/s</th>"
      "<th>not delivered</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th></tr>\n",
      rows, "</table>\n", SvgChart(throughput, {offered, delivered}), "\n", SvgChart(latency, {p50, p95, p99}),
      "\n</body></html>\n");
}

}  // namespace swiftlet::loadgen
