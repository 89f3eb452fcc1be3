// The load generator's outputs: a text table for the terminal, a JSON
// document with every figure and the run's parameters, and a
// self-contained HTML report with SVG charts (no scripts, no network).
#pragma once

#include <string>
#include <vector>

#include "loadgen/load_runner.h"
#include "loadgen/point_summary.h"
#include "loadgen/load_stats.h"

namespace swiftlet::loadgen {

struct RunParameters {
  std::string url;
  std::string model;
  std::string workload;
  std::string slo;  // As given: "ttft=500ms,tpot=100ms".
  SloTargets targets;
  std::string prompt_tokens;  // LengthSpec text.
  std::string output_tokens;
  int64_t streams = 1;
  int64_t languages = 1;
  int64_t shared_prefix_words = 0;
  double burstiness = 1;
  std::string started_utc;  // ISO 8601.
  std::string client_machine;
};

// One point's detail block: counts, percentiles of each latency, rates.
std::string FormatPointText(const PointSummary& summary);
// One row per point.
std::string FormatSweepTable(const std::vector<PointSummary>& summaries);

// {"parameters": {...}, "points": [{figures..., "requests": [...]}]}.
// Latencies in milliseconds; request times relative to the point's start.
std::string ReportJson(const RunParameters& params, const std::vector<PointSummary>& summaries,
                       const std::vector<PointResult>& results);

// Charts: goodput and throughput against offered load (sweeps), latency
// CDFs per point (TTFT, TPOT, ITL, end to end), TTFT over time; then the
// figures as tables.
std::string ReportHtml(const RunParameters& params, const std::vector<PointSummary>& summaries,
                       const std::vector<PointResult>& results);

}  // namespace swiftlet::loadgen
