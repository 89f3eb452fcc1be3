#include <nlohmann/json.hpp>

#include "core/clock.h"
#include "loadgen/report.h"

namespace swiftlet::loadgen {
namespace {

using Json = nlohmann::ordered_json;


Json Latency(const LatencySummary& l) {
  return {{"count", l.count},         {"mean", Ms(l.mean_ns)}, {"p50", Ms(l.p50_ns)},
          {"p90", Ms(l.p90_ns)},      {"p95", Ms(l.p95_ns)},   {"p99", Ms(l.p99_ns)},
          {"max", Ms(l.max_ns)}};
}

const char* OutcomeName(RequestOutcome o) {
  switch (o) {
    case RequestOutcome::kFinished: return "finished";
    case RequestOutcome::kRefused: return "refused";
    case RequestOutcome::kFailed: return "failed";
  }
  return "failed";
}

Json Request(const RequestResult& r, int64_t start_ns) {
  const RequestTimeline& t = r.timeline;
  auto rel = [&](int64_t ns) { return ns < 0 ? Json(nullptr) : Json(Ms(static_cast<double>(ns - start_ns))); };
  Json j = {{"index", r.index},
            {"warmup", t.warmup},
            {"outcome", OutcomeName(t.outcome)},
            {"kind", r.kind},
            {"http_status", r.http_status},
            {"arrival_ms", rel(t.arrival_ns)},
            {"sent_ms", rel(r.sent_ns)},
            {"first_token_ms", rel(t.first_token_ns)},
            {"finish_ms", rel(t.finish_ns)},
            {"output_tokens", t.output_tokens},
            {"asked_output_tokens", r.asked_output_tokens},
            {"chunks", r.chunks},
            {"prompt_tokens", r.prompt_tokens},
            {"cached_prompt_tokens", r.cached_prompt_tokens},
            {"finish_reason", r.finish_reason}};
  if (t.outcome == RequestOutcome::kRefused) {
    j["refused_after_ms"] = Ms(static_cast<double>(t.refused_after_ns));
    j["retry_after_ms"] = r.retry_after_ms;
  }
  return j;
}

}  // namespace

std::string ReportJson(const RunParameters& p, const std::vector<PointSummary>& summaries,
                       const std::vector<PointResult>& results) {
  Json points = Json::array();
  for (size_t i = 0; i < summaries.size(); ++i) {
    const PointSummary& s = summaries[i];
    const LoadReport& r = s.report;
    Json point = {
        {"mode", s.point.mode == LoadMode::kOpenLoop ? "open_loop" : "closed_loop"},
        {"label", PointLabel(s.point)},
        {"offered_load", OfferedLoad(s.point)},
        {"burstiness", s.point.burstiness},
        {"warmup_requests", s.point.warmup_requests},
        {"offered", r.offered},
        {"finished", r.finished},
        {"refused", r.refused},
        {"errors", r.errors},
        {"met_slo", r.met_slo},
        {"refusals_by_kind", s.refusals_by_kind},
        {"errors_by_kind", s.errors_by_kind},
        {"ttft_ms", Latency(r.ttft)},
        {"tpot_ms", Latency(r.tpot)},
        {"itl_ms", Latency(r.itl)},
        {"e2e_ms", Latency(r.e2e)},
        {"duration_s", static_cast<double>(r.duration_ns) / 1e9},
        {"throughput_req_s", r.request_throughput_per_s},
        {"output_tok_s", r.output_token_throughput_per_s},
        {"goodput_req_s", r.goodput_per_s},
        {"attainment_pct", r.slo_attainment_pct},
        {"max_refusal_decision_ms", Ms(static_cast<double>(r.max_refusal_decision_ns))},
        {"refusals_with_retry_after", s.refusals_with_retry_after},
        {"output_token_mismatches", s.output_token_mismatches},
        {"mean_prompt_tokens", s.mean_prompt_tokens},
        {"mean_cached_prompt_tokens", s.mean_cached_prompt_tokens},
        {"client",
         {{"wall_s", s.client.wall_s},
          {"cpu_s", s.client.cpu_s},
          {"cpu_pct_of_core", s.client.cpu_pct_of_core},
          {"send_lag_ms", Latency(s.client.send_lag)},
          {"peak_in_flight", s.client.peak_in_flight},
          {"saturated", s.client_saturated}}}};
    if (s.point.mode == LoadMode::kOpenLoop) {
      point["rate_req_s"] = s.point.rate_per_s;
    } else {
      point["concurrency"] = s.point.concurrency;
    }
    Json requests = Json::array();
    if (i < results.size()) {
      for (const RequestResult& req : results[i].requests) {
        requests.push_back(Request(req, results[i].start_ns));
      }
    }
    point["requests"] = std::move(requests);
    points.push_back(std::move(point));
  }
  Json doc = {{"parameters",
               {{"url", p.url},
                {"model", p.model},
                {"workload", p.workload},
                {"slo", p.slo},
                {"slo_ms",
                 {{"ttft", Ms(static_cast<double>(p.targets.ttft_ns))},
                  {"tpot", Ms(static_cast<double>(p.targets.tpot_ns))},
                  {"e2e", Ms(static_cast<double>(p.targets.e2e_ns))}}},
                {"prompt_tokens", p.prompt_tokens},
                {"output_tokens", p.output_tokens},
                {"streams", p.streams},
                {"languages", p.languages},
                {"shared_prefix_words", p.shared_prefix_words},
                {"burstiness", p.burstiness},
                {"started_utc", p.started_utc},
                {"client_machine", p.client_machine}}},
              {"points", std::move(points)}};
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace swiftlet::loadgen
