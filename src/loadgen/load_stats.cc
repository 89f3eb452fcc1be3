#include "loadgen/load_stats.h"

#include <algorithm>

namespace swiftlet::loadgen {
namespace {

double PerSecond(double n, int64_t duration_ns) {
  return duration_ns > 0 ? n * 1e9 / static_cast<double>(duration_ns) : 0.0;
}

// Nearest rank: the ceil(p * n / 100)-th smallest, 1-based.
double NearestRank(const std::vector<double>& sorted, int p) {
  const auto n = static_cast<int64_t>(sorted.size());
  const int64_t rank = std::max<int64_t>(1, (p * n + 99) / 100);
  return sorted[static_cast<size_t>(rank - 1)];
}

}  // namespace

LatencySummary SummarizeLatencies(std::vector<double> samples) {
  LatencySummary s;
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.count = static_cast<int64_t>(samples.size());
  double total = 0;
  for (double v : samples) total += v;
  s.mean_ns = total / static_cast<double>(samples.size());
  s.p50_ns = NearestRank(samples, 50);
  s.p90_ns = NearestRank(samples, 90);
  s.p95_ns = NearestRank(samples, 95);
  s.p99_ns = NearestRank(samples, 99);
  s.max_ns = samples.back();
  return s;
}

LoadReport Summarize(const std::vector<RequestTimeline>& timelines, const SloTargets& slo,
                     int64_t duration_ns) {
  LoadReport rep;
  rep.duration_ns = duration_ns;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t output_tokens = 0;
  for (const RequestTimeline& r : timelines) {
    if (r.warmup) continue;
    rep.offered += 1;
    if (r.outcome == RequestOutcome::kRefused) {
      rep.refused += 1;
      rep.max_refusal_decision_ns = std::max(rep.max_refusal_decision_ns, r.refused_after_ns);
      continue;
    }
    if (r.outcome != RequestOutcome::kFinished || r.finish_ns < 0) {
      rep.errors += 1;
      continue;
    }
    rep.finished += 1;
    output_tokens += r.output_tokens;
    const int64_t e2e_ns = r.finish_ns - r.arrival_ns;
    e2e.push_back(static_cast<double>(e2e_ns));
    // With no token at all (end of sequence first), the client's first
    // answer is the end of the response.
    const int64_t ttft_ns = r.first_token_ns >= 0 ? r.first_token_ns - r.arrival_ns : e2e_ns;
    if (r.first_token_ns >= 0) ttft.push_back(static_cast<double>(ttft_ns));
    bool met = (slo.ttft_ns == 0 || ttft_ns <= slo.ttft_ns) &&
               (slo.e2e_ns == 0 || e2e_ns <= slo.e2e_ns);
    if (r.output_tokens >= 2 && !r.token_times_ns.empty() && r.first_token_ns >= 0) {
      const int64_t span = r.token_times_ns.back() - r.first_token_ns;
      tpot.push_back(static_cast<double>(span) / static_cast<double>(r.output_tokens - 1));
      // span / (n - 1) <= target, without rounding.
      if (slo.tpot_ns != 0 && span > slo.tpot_ns * (r.output_tokens - 1)) met = false;
    }
    for (size_t i = 1; i < r.token_times_ns.size(); ++i) {
      itl.push_back(static_cast<double>(r.token_times_ns[i] - r.token_times_ns[i - 1]));
    }
    rep.met_slo += met;
  }
  rep.ttft = SummarizeLatencies(std::move(ttft));
  rep.tpot = SummarizeLatencies(std::move(tpot));
  rep.itl = SummarizeLatencies(std::move(itl));
  rep.e2e = SummarizeLatencies(std::move(e2e));
  rep.request_throughput_per_s = PerSecond(static_cast<double>(rep.finished), duration_ns);
  rep.output_token_throughput_per_s = PerSecond(static_cast<double>(output_tokens), duration_ns);
  rep.goodput_per_s = PerSecond(static_cast<double>(rep.met_slo), duration_ns);
  rep.slo_attainment_pct =
      rep.offered > 0 ? 100.0 * static_cast<double>(rep.met_slo) / static_cast<double>(rep.offered)
                      : 0.0;
  return rep;
}

int64_t MeasurementWindowNs(const std::vector<RequestTimeline>& timelines) {
  bool any = false;
  int64_t start = 0, end = 0;
  for (const RequestTimeline& r : timelines) {
    if (r.warmup) continue;
    start = any ? std::min(start, r.arrival_ns) : r.arrival_ns;
    int64_t last = r.arrival_ns;
    if (r.outcome == RequestOutcome::kRefused) {
      last = std::max(last, r.arrival_ns + r.refused_after_ns);
    }
    if (!r.token_times_ns.empty()) last = std::max(last, r.token_times_ns.back());
    if (r.finish_ns >= 0) last = std::max(last, r.finish_ns);
    end = any ? std::max(end, last) : last;
    any = true;
  }
  return any ? end - start : 0;
}

}  // namespace swiftlet::loadgen
