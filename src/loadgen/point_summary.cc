#include "loadgen/point_summary.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "core/str_cat.h"

namespace swiftlet::loadgen {

std::string PointLabel(const LoadPoint& p) {
  if (p.mode == LoadMode::kClosedLoop) return StrCat("concurrency ", p.concurrency);
  char buf[64];
  std::snprintf(buf, sizeof buf, "rate %g req/s", p.rate_per_s);
  return buf;
}

double OfferedLoad(const LoadPoint& p) {
  return p.mode == LoadMode::kClosedLoop ? static_cast<double>(p.concurrency) : p.rate_per_s;
}

PointSummary SummarizePoint(const PointResult& result, const SloTargets& slo) {
  PointSummary s;
  s.point = result.point;
  s.client = result.client;
  std::vector<RequestTimeline> timelines;
  timelines.reserve(result.requests.size());
  int64_t prompt_sum = 0, cached_sum = 0, with_usage = 0;
  for (const RequestResult& r : result.requests) {
    timelines.push_back(r.timeline);
    if (r.timeline.warmup) continue;
    switch (r.timeline.outcome) {
      case RequestOutcome::kRefused:
        s.refusals_by_kind[r.kind] += 1;
        s.refusals_with_retry_after += r.retry_after_ms >= 0;
        break;
      case RequestOutcome::kFailed:
        s.errors_by_kind[r.kind.empty() ? "error" : r.kind] += 1;
        break;
      case RequestOutcome::kFinished:
        s.output_token_mismatches += r.timeline.output_tokens != r.asked_output_tokens;
        if (r.prompt_tokens >= 0) {
          with_usage += 1;
          prompt_sum += r.prompt_tokens;
          cached_sum += std::max<int64_t>(0, r.cached_prompt_tokens);
        }
        break;
    }
  }
  s.report = Summarize(timelines, slo, MeasurementWindowNs(timelines));
  if (with_usage > 0) {
    s.mean_prompt_tokens = static_cast<double>(prompt_sum) / static_cast<double>(with_usage);
    s.mean_cached_prompt_tokens = static_cast<double>(cached_sum) / static_cast<double>(with_usage);
  }
  s.client_saturated = s.client.cpu_pct_of_core >= kSaturatedCpuPct ||
                       s.client.send_lag.p99_ns >= static_cast<double>(kSaturatedSendLagNs);
  return s;
}

}  // namespace swiftlet::loadgen
