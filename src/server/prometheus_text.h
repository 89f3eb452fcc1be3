// The Prometheus text exposition format (version 0.0.4) of the engine's
// metrics, for /metrics. The engine records (engine/metrics.h); the server
// formats.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/metrics.h"
#include "translate/translate_metrics.h"
#include "translate/translation_cache.h"

namespace swiftlet::server {

// Per metric a HELP and a TYPE line, then its samples; names start with
// `prefix` (a valid metric name prefix, checked). Histograms give cumulative
// `_bucket{le="..."}` lines ending with le="+Inf", then `_sum` and `_count`.
std::string FormatPrometheus(const EngineMetrics& metrics, std::string_view prefix = "swiftlet_");

// Several models' engines: each family once, each series labeled
// model="<name>" (no label where the name is empty).
struct LabeledEngineMetrics {
  std::string model;
  const EngineMetrics* metrics;
};
std::string FormatPrometheus(const std::vector<LabeledEngineMetrics>& models, std::string_view prefix = "swiftlet_");

// The translation service's metrics (and its cache's, when it has one).
std::string FormatTranslatePrometheus(const translate::TranslateMetrics& metrics, const translate::CacheStats* cache,
                                      std::string_view prefix = "swiftlet_");

// The latency targets each class is admitted and scheduled against
// (--slo-interactive, --slo-batch, --slo-embedding) as a gauge
// slo_target_seconds{class, target="ttft"|"tpot"}, so alert rules and
// dashboards compare measured latency with the server's own targets. A
// target that is not set (0) is left out.
std::string FormatSloTargets(const LatencyTargets& interactive, const LatencyTargets& batch,
                             const LatencyTargets& embedding, std::string_view prefix = "swiftlet_");

// One histogram family with a series per value of `label` (e.g. one per
// model): HELP and TYPE once, then each series' buckets, sum and count.
std::string FormatHistogramFamily(std::string_view name, std::string_view label,
                                  const std::vector<std::pair<std::string, HistogramSnapshot>>& series,
                                  std::string_view help, std::string_view prefix = "swiftlet_");

// A sample value: shortest round-trip form, or NaN, +Inf, -Inf.
std::string FormatPrometheusValue(double v);
// A label value with backslash, double quote and newline escaped.
std::string EscapePrometheusLabel(std::string_view v);

}  // namespace swiftlet::server
