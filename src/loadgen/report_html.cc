#include <algorithm>
#include <string>

#include "core/clock.h"
#include "core/number_format.h"
#include "loadgen/report.h"
#include "loadgen/svg_chart.h"

namespace swiftlet::loadgen {
namespace {

constexpr size_t kMaxCdfPoints = 400;
constexpr size_t kMaxDots = 2000;


// (value, percentage of samples <= value), at most kMaxCdfPoints of them.
std::vector<std::pair<double, double>> Cdf(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::vector<std::pair<double, double>> out;
  const size_t n = values.size();
  const size_t stride = std::max<size_t>(1, n / kMaxCdfPoints);
  for (size_t i = 0; i < n; i += stride) {
    out.emplace_back(values[i], 100.0 * static_cast<double>(i + 1) / static_cast<double>(n));
  }
  if (n > 0 && out.back().second < 100) out.emplace_back(values.back(), 100.0);
  return out;
}

enum class Metric { kTtft, kTpot, kItl, kE2e };

// The samples Summarize uses, per finished non-warmup request, in ms.
std::vector<double> Samples(const PointResult& result, Metric metric) {
  std::vector<double> out;
  for (const RequestResult& r : result.requests) {
    const RequestTimeline& t = r.timeline;
    if (t.warmup || t.outcome != RequestOutcome::kFinished) continue;
    switch (metric) {
      case Metric::kTtft:
        if (t.first_token_ns >= 0) out.push_back(Ms(static_cast<double>(t.first_token_ns - t.arrival_ns)));
        break;
      case Metric::kTpot:
        if (t.output_tokens >= 2 && !t.token_times_ns.empty() && t.first_token_ns >= 0) {
          out.push_back(Ms(static_cast<double>(t.token_times_ns.back() - t.first_token_ns) /
                           static_cast<double>(t.output_tokens - 1)));
        }
        break;
      case Metric::kItl:
        for (size_t i = 1; i < t.token_times_ns.size(); ++i) {
          out.push_back(Ms(static_cast<double>(t.token_times_ns[i] - t.token_times_ns[i - 1])));
        }
        break;
      case Metric::kE2e:
        out.push_back(Ms(static_cast<double>(t.finish_ns - t.arrival_ns)));
        break;
    }
  }
  return out;
}

std::string CdfChart(const std::string& title, Metric metric, double target_ms,
                     const std::vector<PointSummary>& summaries,
                     const std::vector<PointResult>& results) {
  std::vector<ChartSeries> series;
  for (size_t i = 0; i < results.size() && i < summaries.size(); ++i) {
    series.push_back({PointLabel(summaries[i].point), Cdf(Samples(results[i], metric))});
  }
  ChartSpec spec;
  spec.title = title + " CDF";
  spec.x_label = title + " (ms)";
  spec.y_label = "% of finished requests";
  spec.reference_x = target_ms;
  spec.reference_label = "target";
  return SvgChart(spec, series);
}

std::string TtftOverTime(double target_ms, const std::vector<PointSummary>& summaries,
                         const std::vector<PointResult>& results) {
  std::vector<ChartSeries> series;
  for (size_t i = 0; i < results.size() && i < summaries.size(); ++i) {
    ChartSeries s{PointLabel(summaries[i].point), {}};
    const auto& reqs = results[i].requests;
    const size_t stride = std::max<size_t>(1, reqs.size() / kMaxDots);
    for (size_t k = 0; k < reqs.size(); k += stride) {
      const RequestTimeline& t = reqs[k].timeline;
      if (t.first_token_ns < 0) continue;
      s.points.emplace_back(static_cast<double>(t.arrival_ns - results[i].start_ns) / 1e9,
                            Ms(static_cast<double>(t.first_token_ns - t.arrival_ns)));
    }
    series.push_back(std::move(s));
  }
  ChartSpec spec;
  spec.title = "TTFT over time";
  spec.x_label = "arrival (s since the point started)";
  spec.y_label = "TTFT (ms)";
  spec.dots = true;
  spec.reference_y = target_ms;
  spec.reference_label = "TTFT target";
  return SvgChart(spec, series);
}

std::string SweepCharts(const std::vector<PointSummary>& summaries) {
  const bool open = summaries.front().point.mode == LoadMode::kOpenLoop;
  ChartSeries throughput{"throughput", {}}, goodput{"goodput", {}}, offered{"offered", {}};
  ChartSeries ttft50{"TTFT p50", {}}, ttft99{"TTFT p99", {}}, tpot99{"TPOT p99", {}};
  for (const PointSummary& s : summaries) {
    const double x = OfferedLoad(s.point);
    throughput.points.emplace_back(x, s.report.request_throughput_per_s);
    goodput.points.emplace_back(x, s.report.goodput_per_s);
    if (open) offered.points.emplace_back(x, x);
    ttft50.points.emplace_back(x, Ms(s.report.ttft.p50_ns));
    ttft99.points.emplace_back(x, Ms(s.report.ttft.p99_ns));
    tpot99.points.emplace_back(x, Ms(s.report.tpot.p99_ns));
  }
  const std::string x_label = open ? "offered load (req/s)" : "concurrency (requests in flight)";
  ChartSpec rates;
  rates.title = "Throughput and goodput against offered load";
  rates.x_label = x_label;
  rates.y_label = "requests/s";
  std::vector<ChartSeries> rate_series = {throughput, goodput};
  if (open) rate_series.push_back(offered);
  ChartSpec lat;
  lat.title = "Latency against offered load";
  lat.x_label = x_label;
  lat.y_label = "ms";
  return SvgChart(rates, rate_series) + SvgChart(lat, {ttft50, ttft99, tpot99});
}

std::string Cell(const std::string& s) { return "<td>" + EscapeXml(s) + "</td>"; }

std::string Tables(const std::vector<PointSummary>& summaries) {
  std::string h = "<h2>Figures</h2>\n<table>\n<tr><th>load</th><th>offered</th><th>finished</th>"
                  "<th>refused</th><th>errors</th><th>req/s</th><th>output tok/s</th>"
                  "<th>goodput req/s</th><th>attainment</th><th>max refusal decision</th>"
                  "<th>client CPU</th></tr>\n";
  for (const PointSummary& s : summaries) {
    const LoadReport& r = s.report;
    h += "<tr>" + Cell(PointLabel(s.point)) + Cell(std::to_string(r.offered)) +
         Cell(std::to_string(r.finished)) + Cell(std::to_string(r.refused)) +
         Cell(std::to_string(r.errors)) + Cell(Fixed(r.request_throughput_per_s, 2)) +
         Cell(Fixed(r.output_token_throughput_per_s, 1)) + Cell(Fixed(r.goodput_per_s, 2)) +
         Cell(Fixed(r.slo_attainment_pct, 1) + "%") +
         Cell(Fixed(Ms(static_cast<double>(r.max_refusal_decision_ns)), 1) + " ms") +
         Cell(Fixed(s.client.cpu_pct_of_core, 0) + "%" + (s.client_saturated ? " (saturated)" : "")) +
         "</tr>\n";
  }
  h += "</table>\n<h2>Latency percentiles (ms)</h2>\n<table>\n<tr><th>load</th><th>metric</th>"
       "<th>mean</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th><th>n</th></tr>\n";
  for (const PointSummary& s : summaries) {
    const std::pair<const char*, const LatencySummary*> rows[] = {
        {"TTFT", &s.report.ttft}, {"TPOT", &s.report.tpot}, {"ITL", &s.report.itl},
        {"E2E", &s.report.e2e}};
    for (const auto& [name, l] : rows) {
      h += "<tr>" + Cell(PointLabel(s.point)) + Cell(name) + Cell(Fixed(Ms(l->mean_ns), 1)) +
           Cell(Fixed(Ms(l->p50_ns), 1)) + Cell(Fixed(Ms(l->p90_ns), 1)) +
           Cell(Fixed(Ms(l->p95_ns), 1)) + Cell(Fixed(Ms(l->p99_ns), 1)) +
           Cell(Fixed(Ms(l->max_ns), 1)) + Cell(std::to_string(l->count)) + "</tr>\n";
    }
  }
  h += "</table>\n";
  for (const PointSummary& s : summaries) {
    std::string kinds;
    for (const auto& [k, n] : s.refusals_by_kind) kinds += k + " " + std::to_string(n) + "; ";
    for (const auto& [k, n] : s.errors_by_kind) kinds += k + " " + std::to_string(n) + "; ";
    if (!kinds.empty()) h += "<p>" + EscapeXml(PointLabel(s.point) + ": " + kinds) + "</p>\n";
  }
  return h;
}

}  // namespace

std::string ReportHtml(const RunParameters& p, const std::vector<PointSummary>& summaries,
                       const std::vector<PointResult>& results) {
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>swiftlet bench report</title>\n<style>\n"
      "body{font-family:sans-serif;margin:24px;max-width:1360px}"
      "table{border-collapse:collapse;margin:8px 0}"
      "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
      "th{background:#f3f3f3}svg{margin:8px 8px 8px 0}"
      "dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px}dt{font-weight:bold}\n"
      "</style>\n</head>\n<body>\n<h1>swiftlet bench report</h1>\n<dl>\n";
  const std::pair<const char*, std::string> params[] = {
      {"server", p.url},
      {"model", p.model},
      {"workload", p.workload},
      {"prompt words", p.prompt_tokens},
      {"output tokens", p.output_tokens},
      {"targets", p.slo},
      {"burstiness", Fixed(p.burstiness, 2)},
      {"started (UTC)", p.started_utc},
      {"client machine", p.client_machine}};
  for (const auto& [k, v] : params) h += "<dt>" + std::string(k) + "</dt><dd>" + EscapeXml(v) + "</dd>\n";
  h += "</dl>\n";
  if (summaries.empty()) return h + "<p>No load points ran.</p>\n</body>\n</html>\n";
  h += "<h2>Charts</h2>\n<div>\n";
  if (summaries.size() > 1) h += SweepCharts(summaries);
  const double ttft_ms = Ms(static_cast<double>(p.targets.ttft_ns));
  const double tpot_ms = Ms(static_cast<double>(p.targets.tpot_ns));
  const double e2e_ms = Ms(static_cast<double>(p.targets.e2e_ns));
  h += CdfChart("TTFT", Metric::kTtft, ttft_ms, summaries, results);
  h += CdfChart("TPOT", Metric::kTpot, tpot_ms, summaries, results);
  h += CdfChart("Inter-token latency", Metric::kItl, 0, summaries, results);
  h += CdfChart("End-to-end latency", Metric::kE2e, e2e_ms, summaries, results);
  h += TtftOverTime(ttft_ms, summaries, results);
  h += "</div>\n" + Tables(summaries) + "</body>\n</html>\n";
  return h;
}

}  // namespace swiftlet::loadgen
