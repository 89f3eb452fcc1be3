#include <cstdio>
#include <string>

#include "core/clock.h"
#include "loadgen/report.h"

namespace swiftlet::loadgen {
namespace {

std::string Format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

std::string Kinds(const std::map<std::string, int64_t>& kinds) {
  std::string s;
  for (const auto& [kind, n] : kinds) {
    s += (s.empty() ? " (" : ", ") + kind + " " + std::to_string(n);
  }
  return s.empty() ? s : s + ")";
}


}  // namespace

std::string FormatPointText(const PointSummary& s) {
  const LoadReport& r = s.report;
  std::string out = Format("== %s: %lld offered, %lld finished, %lld refused%s, %lld errors%s\n",
                           PointLabel(s.point).c_str(), static_cast<long long>(r.offered),
                           static_cast<long long>(r.finished), static_cast<long long>(r.refused),
                           Kinds(s.refusals_by_kind).c_str(), static_cast<long long>(r.errors),
                           Kinds(s.errors_by_kind).c_str());
  out += Format("  %-6s %9s %9s %9s %9s %9s %9s %7s\n", "ms", "mean", "p50", "p90", "p95", "p99",
                "max", "n");
  auto row = [&](const char* name, const LatencySummary& l) {
    out += Format("  %-6s %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f %7lld\n", name, Ms(l.mean_ns),
                  Ms(l.p50_ns), Ms(l.p90_ns), Ms(l.p95_ns), Ms(l.p99_ns), Ms(l.max_ns),
                  static_cast<long long>(l.count));
  };
  row("ttft", r.ttft);
  row("tpot", r.tpot);
  row("itl", r.itl);
  row("e2e", r.e2e);
  out += Format("  %.2f req/s, %.1f output tok/s over %.1f s; goodput %.2f req/s (%.1f%% met "
                "every target)\n",
                r.request_throughput_per_s, r.output_token_throughput_per_s,
                static_cast<double>(r.duration_ns) / 1e9, r.goodput_per_s, r.slo_attainment_pct);
  if (r.refused > 0) {
    out += Format("  refusals decided within %.1f ms of arrival (max); %lld of %lld said Retry-After\n",
                  Ms(static_cast<double>(r.max_refusal_decision_ns)),
                  static_cast<long long>(s.refusals_with_retry_after),
                  static_cast<long long>(r.refused));
  }
  out += Format("  prompt %.1f tokens (%.1f cached) by the server's count; client %.0f%% of a core, "
                "send lag p99 %.2f ms, peak %lld in flight\n",
                s.mean_prompt_tokens, s.mean_cached_prompt_tokens, s.client.cpu_pct_of_core,
                Ms(s.client.send_lag.p99_ns), static_cast<long long>(s.client.peak_in_flight));
  if (s.output_token_mismatches > 0) {
    out += Format("  warning: %lld finished requests did not get the output tokens asked for (does "
                  "the server honour ignore_eos / min_tokens?)\n",
                  static_cast<long long>(s.output_token_mismatches));
  }
  if (s.client_saturated) {
    out += "  warning: the client itself is saturated (CPU or late sends); its timings are not "
           "trustworthy at this load\n";
  }
  return out;
}

std::string FormatSweepTable(const std::vector<PointSummary>& summaries) {
  std::string out = Format("%-22s %7s %7s %7s %6s %9s %9s %9s %9s %9s %8s %9s %8s\n", "load",
                           "offered", "done", "refused", "errors", "ttft_p50", "ttft_p99",
                           "tpot_p50", "tpot_p99", "req/s", "tok/s", "goodput", "attain");
  for (const PointSummary& s : summaries) {
    const LoadReport& r = s.report;
    out += Format("%-22s %7lld %7lld %7lld %6lld %7.0fms %7.0fms %7.1fms %7.1fms %9.2f %8.1f %9.2f "
                  "%7.1f%%\n",
                  PointLabel(s.point).c_str(), static_cast<long long>(r.offered),
                  static_cast<long long>(r.finished), static_cast<long long>(r.refused),
                  static_cast<long long>(r.errors), Ms(r.ttft.p50_ns), Ms(r.ttft.p99_ns),
                  Ms(r.tpot.p50_ns), Ms(r.tpot.p99_ns), r.request_throughput_per_s,
                  r.output_token_throughput_per_s, r.goodput_per_s, r.slo_attainment_pct);
  }
  return out;
}

}  // namespace swiftlet::loadgen
