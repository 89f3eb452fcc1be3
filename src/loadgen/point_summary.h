// The figures of one load point, computed from its requests: the shared
// latency statistics (core/load_stats.h) plus what only an HTTP client
// sees (refusals and errors by kind, the server's token counts, the
// client's own load). Pure: the same requests give the same summary.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "loadgen/load_runner.h"
#include "loadgen/load_stats.h"

namespace swiftlet::loadgen {

struct PointSummary {
  LoadPoint point;
  LoadReport report;
  std::map<std::string, int64_t> refusals_by_kind;
  std::map<std::string, int64_t> errors_by_kind;
  // Finished requests whose output token count differs from what was
  // asked (a server that ignores ignore_eos / min_tokens stops early).
  int64_t output_token_mismatches = 0;
  double mean_prompt_tokens = 0;         // Server's usage, finished requests.
  double mean_cached_prompt_tokens = 0;
  int64_t refusals_with_retry_after = 0;
  ClientUsage client;
  // The client's own numbers say it may have distorted the timings: its
  // CPU use near one core (its I/O runs on one thread), or sends late.
  bool client_saturated = false;
};

inline constexpr double kSaturatedCpuPct = 85;
inline constexpr int64_t kSaturatedSendLagNs = 10 * kNsPerMs;

PointSummary SummarizePoint(const PointResult& result, const SloTargets& slo);

// "rate 4 req/s" or "concurrency 8".
std::string PointLabel(const LoadPoint& point);
// The point's offered load: its rate (req/s) or its concurrency.
double OfferedLoad(const LoadPoint& point);

}  // namespace swiftlet::loadgen
