#include "gateway/status_pages.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "core/str_cat.h"

namespace swiftlet::gateway {
namespace {

// Rounded for reading: a microsecond is finer than any figure here means.
double Round3(double v) { return std::round(v * 1000) / 1000; }

// Site names are [A-Za-z0-9._-] (site_config.h): safe as label values.
std::string Label(const std::string& site) { return StrCat("site=\"", site, "\""); }

void Header(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += StrCat("# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n");
}

std::string Number(double v) {
  if (!std::isfinite(v)) return "0";
  return StrCat(v);
}

}  // namespace

std::string SitesJson(const std::vector<SiteView>& sites) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const SiteView& v : sites) {
    nlohmann::ordered_json j;
    j["name"] = v.name;
    j["url"] = v.url;
    j["state"] = SiteStateName(v.state);
    j["breaker"] = BreakerStateName(v.breaker);
    j["eligible"] = v.eligible;
    j["rtt_ms"] = v.rtt_known ? nlohmann::ordered_json(Round3(v.rtt_ms)) : nlohmann::ordered_json(nullptr);
    j["wait_ms"] = Round3(v.wait_ms);
    j["in_flight"] = v.in_flight;
    j["score_ms"] = v.rtt_known ? nlohmann::ordered_json(Round3(v.score_ms)) : nlohmann::ordered_json(nullptr);
    j["retry_after_ms"] = v.retry_after_left_ms;
    j["consecutive_poll_failures"] = v.consecutive_poll_failures;
    j["ejections"] = v.ejections;
    j["breaker_trips"] = v.breaker_trips;
    j["last_error"] = v.last_error.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v.last_error);
    list.push_back(std::move(j));
  }
  nlohmann::ordered_json out;
  out["sites"] = std::move(list);
  // The error text is the site's or the network's: never let bad UTF-8 in
  // it throw.
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string MetricsText(const GatewayContext& ctx, const std::vector<std::shared_ptr<Site>>& sites,
                        int64_t now_ns) {
  std::vector<SiteView> views;
  for (const auto& s : sites) views.push_back(s->View(now_ns));
  std::string out;

  Header(out, "swiftlet_gateway_requests_total", "counter",
         "Requests and WebSocket upgrades the gateway received");
  out += StrCat("swiftlet_gateway_requests_total ", ctx.counters.requests.load(), "\n");

  Header(out, "swiftlet_gateway_responses_total", "counter",
         "Answers passed to clients, by the site that gave them (none: the gateway's own) and class");
  for (size_t i = 0; i < sites.size(); ++i) {
    for (size_t c = 0; c < kResponseClasses; ++c) {
      out += StrCat("swiftlet_gateway_responses_total{", Label(views[i].name), ",class=\"",
                    ResponseClassName(static_cast<ResponseClass>(c)), "\"} ",
                    sites[i]->counters().responses[c].load(), "\n");
    }
  }
  for (size_t c = 0; c < kResponseClasses; ++c) {
    out += StrCat("swiftlet_gateway_responses_total{site=\"none\",class=\"",
                  ResponseClassName(static_cast<ResponseClass>(c)), "\"} ", ctx.counters.own_responses[c].load(),
                  "\n");
  }

  Header(out, "swiftlet_gateway_site_chosen_total", "counter", "Attempts sent to each site (the chosen site)");
  for (size_t i = 0; i < sites.size(); ++i) {
    out += StrCat("swiftlet_gateway_site_chosen_total{", Label(views[i].name), "} ",
                  sites[i]->counters().attempts.load(), "\n");
  }

  Header(out, "swiftlet_gateway_failovers_total", "counter",
         "Requests moved on from a site before their first byte, by reason");
  for (size_t i = 0; i < sites.size(); ++i) {
    for (size_t r = 0; r < kFailoverReasons; ++r) {
      out += StrCat("swiftlet_gateway_failovers_total{", Label(views[i].name), ",reason=\"",
                    FailoverReasonName(static_cast<FailoverReason>(r)), "\"} ",
                    sites[i]->counters().failovers[r].load(), "\n");
    }
  }

  Header(out, "swiftlet_gateway_stream_errors_total", "counter",
         "SSE streams that broke after their first byte (ended with an error event)");
  for (size_t i = 0; i < sites.size(); ++i) {
    out += StrCat("swiftlet_gateway_stream_errors_total{", Label(views[i].name), "} ",
                  sites[i]->counters().stream_errors.load(), "\n");
  }

  Header(out, "swiftlet_gateway_ejections_total", "counter", "Times a site was ejected by failed health polls");
  for (const SiteView& v : views) out += StrCat("swiftlet_gateway_ejections_total{", Label(v.name), "} ", v.ejections, "\n");

  Header(out, "swiftlet_gateway_breaker_trips_total", "counter", "Times a site's circuit breaker opened");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_breaker_trips_total{", Label(v.name), "} ", v.breaker_trips, "\n");
  }

  Header(out, "swiftlet_gateway_site_eligible", "gauge", "1 if the site may get new work now");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_site_eligible{", Label(v.name), "} ", v.eligible ? 1 : 0, "\n");
  }
  Header(out, "swiftlet_gateway_site_up", "gauge", "1 if health polls find the site up (not ejected, starting or draining)");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_site_up{", Label(v.name), "} ", v.state == SiteState::kUp ? 1 : 0, "\n");
  }
  Header(out, "swiftlet_gateway_site_rtt_seconds", "gauge", "EWMA of the site's health-poll round trips");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_site_rtt_seconds{", Label(v.name), "} ", Number(v.rtt_ms / 1e3), "\n");
  }
  Header(out, "swiftlet_gateway_site_wait_seconds", "gauge", "The site's published estimated wait (/load)");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_site_wait_seconds{", Label(v.name), "} ", Number(v.wait_ms / 1e3), "\n");
  }
  Header(out, "swiftlet_gateway_site_score_seconds", "gauge",
         "Expected time to first token there: RTT + wait + in-flight penalty");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_site_score_seconds{", Label(v.name), "} ", Number(v.score_ms / 1e3), "\n");
  }
  Header(out, "swiftlet_gateway_site_in_flight", "gauge", "Requests the gateway has in flight at the site");
  for (const SiteView& v : views) {
    out += StrCat("swiftlet_gateway_site_in_flight{", Label(v.name), "} ", v.in_flight, "\n");
  }

  Header(out, "swiftlet_gateway_added_latency_seconds", "histogram",
         "Time the gateway added before the answering attempt went out (choice, failed attempts)");
  for (size_t i = 0; i < sites.size(); ++i) {
    const LatencyHistogram::Snapshot h = sites[i]->counters().added_latency.Read();
    uint64_t cumulative = 0;
    for (size_t b = 0; b < LatencyHistogram::kBuckets; ++b) {
      cumulative += h.counts[b];
      const std::string le = b < LatencyHistogram::kBoundsMs.size() ? StrCat(LatencyHistogram::kBoundsMs[b] / 1e3) : "+Inf";
      out += StrCat("swiftlet_gateway_added_latency_seconds_bucket{", Label(views[i].name), ",le=\"", le, "\"} ",
                    cumulative, "\n");
    }
    out += StrCat("swiftlet_gateway_added_latency_seconds_sum{", Label(views[i].name), "} ", Number(h.sum_seconds), "\n");
    out += StrCat("swiftlet_gateway_added_latency_seconds_count{", Label(views[i].name), "} ", cumulative, "\n");
  }

  Header(out, "swiftlet_gateway_websockets_total", "counter", "Live streams relayed to each site");
  for (size_t i = 0; i < sites.size(); ++i) {
    out += StrCat("swiftlet_gateway_websockets_total{", Label(views[i].name), "} ",
                  sites[i]->counters().websockets.load(), "\n");
  }
  Header(out, "swiftlet_gateway_websockets_moved_total", "counter",
         "Live streams closed with 1012 so they reconnect to a better site");
  for (size_t i = 0; i < sites.size(); ++i) {
    out += StrCat("swiftlet_gateway_websockets_moved_total{", Label(views[i].name), "} ",
                  sites[i]->counters().websockets_moved.load(), "\n");
  }

  Header(out, "swiftlet_gateway_in_flight", "gauge", "Proxied requests in flight");
  out += StrCat("swiftlet_gateway_in_flight ", ctx.in_flight.load(), "\n");
  Header(out, "swiftlet_gateway_websockets_open", "gauge", "Live streams relayed now");
  out += StrCat("swiftlet_gateway_websockets_open ", ctx.websockets_open.load(), "\n");
  Header(out, "swiftlet_gateway_no_site_total", "counter", "Requests refused because no site was eligible");
  out += StrCat("swiftlet_gateway_no_site_total ", ctx.counters.no_site.load(), "\n");
  Header(out, "swiftlet_gateway_overloaded_total", "counter", "Requests refused past the gateway's own bounds");
  out += StrCat("swiftlet_gateway_overloaded_total ", ctx.counters.overloaded.load(), "\n");
  Header(out, "swiftlet_gateway_held_total", "counter",
         "Times a request waited in the gateway for a site's Retry-After to pass");
  out += StrCat("swiftlet_gateway_held_total ", ctx.counters.held.load(), "\n");
  Header(out, "swiftlet_gateway_client_gone_total", "counter", "Clients that left before their answer ended");
  out += StrCat("swiftlet_gateway_client_gone_total ", ctx.counters.client_gone.load(), "\n");
  Header(out, "swiftlet_gateway_reloads_total", "counter", "Sites file reloads (SIGHUP), by result");
  out += StrCat("swiftlet_gateway_reloads_total{result=\"ok\"} ", ctx.counters.reloads.load(), "\n");
  out += StrCat("swiftlet_gateway_reloads_total{result=\"error\"} ", ctx.counters.reload_errors.load(), "\n");
  return out;
}

}  // namespace swiftlet::gateway
