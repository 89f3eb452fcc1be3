// The plan as one self-contained HTML page: the same figures as the text
// report in tables, and inline SVG charts of TPOT, TTFT and throughput
// against batch size and of cost against load. No scripts, no external references,
// so it can be mailed or archived as is.
#include "core/str_cat.h"
#include "plan/planner.h"
#include "plan/report_format.h"
#include "plan/svg_chart.h"

namespace swiftlet::plan {
namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 2em; color: #222; max-width: 1100px; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
th { background: #f3f3f3; } td.l, th.l { text-align: left; }
tr.best td { background: #e8f4e8; font-weight: bold; }
tr.miss td { color: #999; }
.bad { color: #b00; font-weight: bold; }
.note { color: #555; }
)";

std::string Cell(const std::string& v, bool left = false) {
  return StrCat(left ? "<td class=\"l\">" : "<td>", XmlEscape(v), "</td>");
}

std::string KeyValue(const std::string& k, const std::string& v) {
  return StrCat("<tr><th class=\"l\">", XmlEscape(k), "</th>", Cell(v, true), "</tr>\n");
}

// One latency against batch size, with its target.
std::string LatencyChart(const PlanReport& r, const char* name, double ServingPoint::*field,
                         double target_s) {
  SvgSeries series{name, {}};
  for (const BatchRow& b : r.batches) {
    series.points.emplace_back(static_cast<double>(b.batch), b.point.*field * 1e3);
  }
  SvgChartSpec spec;
  spec.title = StrCat(name, " against batch size");
  spec.x_label = "batch size (sequences decoded together)";
  spec.y_label = "ms";
  if (target_s > 0) spec.horizontal.push_back({target_s * 1e3, StrCat(name, " target")});
  if (r.feasible) spec.vertical.push_back({static_cast<double>(r.slo_batch), StrCat("batch ", r.slo_batch)});
  return SvgLineChart(spec, {series});
}

std::string ThroughputChart(const PlanReport& r) {
  SvgSeries req{"req/s per replica", {}};
  for (const BatchRow& b : r.batches) req.points.emplace_back(static_cast<double>(b.batch), b.point.req_s);
  SvgChartSpec spec;
  spec.title = "Throughput against batch size";
  spec.x_label = "batch size";
  spec.y_label = "requests per second";
  if (r.feasible) spec.vertical.push_back({static_cast<double>(r.slo_batch), StrCat("batch ", r.slo_batch)});
  return SvgLineChart(spec, {req});
}

std::string CostCharts(const PlanReport& r) {
  SvgSeries hourly{"USD per hour", {}};
  SvgSeries per_1k{"USD per 1K tokens", {}};
  for (const CostPoint& c : r.cost_curve) {
    hourly.points.emplace_back(c.load_req_s, c.cost_per_hour);
    per_1k.points.emplace_back(c.load_req_s, c.cost_per_1k_tokens);
  }
  SvgChartSpec a;
  a.title = "Fleet cost against peak load";
  a.x_label = "peak load (requests per second)";
  a.y_label = "USD per hour";
  a.vertical.push_back({r.inputs.load.peak_req_s, "planned peak"});
  SvgChartSpec b = a;
  b.title = "Cost per 1K tokens against peak load";
  b.y_label = "USD per 1K tokens (prompt + output)";
  return SvgLineChart(a, {hourly}) + SvgLineChart(b, {per_1k});
}

}  // namespace

std::string PlanHtml(const PlanReport& r) {
  const PlanInputs& in = r.inputs;
  const ModelSizing& m = in.model;
  const Hardware& hw = in.hardware;
  std::string h = StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>swiftlet plan: ",
      XmlEscape(in.model_name), " on ", XmlEscape(hw.name), "</title>\n<style>", kStyle,
      "</style></head><body>\n");
  h += StrCat("<h1>swiftlet plan: ", XmlEscape(in.model_name), " (", XmlEscape(m.weight_format),
              ") on ", XmlEscape(hw.name), "</h1>\n");
  if (!r.feasible) h += StrCat("<p class=\"bad\">Not feasible: ", XmlEscape(r.infeasible_reason), "</p>\n");

  h += "<h2>Inputs</h2>\n<table>\n";
  h += KeyValue("model", StrCat(m.shape.arch, ", ", HumanCount(m.cost.n_params), " parameters, ",
                                m.shape.n_layer, " layers, ", m.shape.n_head, " heads (", m.shape.n_head_kv,
                                " KV) x ", m.shape.head_dim));
  h += KeyValue("weights", StrCat(HumanBytes(m.weights_bytes), "; ", HumanBytes(m.cost.weight_bytes_per_token),
                                  " read per decode step; file ", HumanBytes(m.file_bytes)));
  h += KeyValue("KV cache", StrCat(NameOf(in.kv_type), ", ", Grouped(r.kv_bytes_per_token),
                                   " bytes per token, ", HumanBytes(r.kv_bytes_per_sequence),
                                   " per sequence of ", r.context, " tokens"));
  h += KeyValue("device", StrCat(hw.description.empty() ? hw.name : hw.description, ": ",
                                 HumanBytes(hw.memory_bytes), ", ", Fixed(hw.bandwidth_gbs, 0), " GB/s, int8 ",
                                 Fixed(hw.int8_tops, 1), " TOPS, float ", Fixed(hw.fp16_tflops, 2),
                                 " TFLOPS, ", Money(hw.price_per_hour), " per hour"));
  h += KeyValue("load", StrCat(Fixed(in.load.peak_req_s, 2), " req/s at the peak; ", in.load.prompt_tokens,
                               " prompt + ", in.load.output_tokens, " output tokens",
                               in.load.streams > 0 ? StrCat("; ", in.load.streams, " streams x ",
                                                            Fixed(in.load.comment_rate, 3),
                                                            " comments/s x ", in.load.languages,
                                                            " languages")
                                                   : ""));
  h += KeyValue("targets", SloText(in.slo));
  std::string eff;
  for (const auto& [batch, f] : in.calibration.efficiency.decode) {
    eff += StrCat(eff.empty() ? "decode " : ", ", "b", batch, " ", Fixed(f, 3));
  }
  if (eff.empty()) eff = "decode 1";
  h += KeyValue("efficiency", StrCat(eff, "; prefill ", Fixed(in.calibration.efficiency.prefill, 3),
                                     "; serving ", Fixed(in.calibration.efficiency.serving, 3)));
  h += "</table>\n";

  h += "<h2>Memory</h2>\n<table>\n";
  h += KeyValue("usable per device", StrCat(HumanBytes(r.usable_bytes_per_device), " (",
                                            Fixed(in.memory_reserve * 100, 0), "% reserved)"));
  h += KeyValue("devices per replica", StrCat(r.tensor_parallel));
  h += KeyValue("weights per device", HumanBytes(r.weights_bytes_per_device));
  h += KeyValue("sequences that fit", Grouped(static_cast<uint64_t>(r.max_concurrency)));
  h += KeyValue("batch limit", StrCat(r.batch_limit));
  h += "</table>\n";

  if (!r.batches.empty()) {
    h += "<h2>By batch size</h2>\n";
    h += LatencyChart(r, "TPOT", &ServingPoint::tpot_s, in.slo.tpot);
    h += LatencyChart(r, "TTFT", &ServingPoint::ttft_s, in.slo.ttft);
    h += ThroughputChart(r);
    h += "<table>\n<tr><th>batch</th><th>roofline ms</th><th>bound</th><th>efficiency</th>"
         "<th>TPOT ms</th><th>TTFT ms</th><th>e2e ms</th><th>req/s</th><th>decode tok/s</th>"
         "<th>memory per device</th><th>targets</th></tr>\n";
    for (const BatchRow* b : TableRows(r)) {
      const bool best = b->batch == r.slo_batch;
      h += StrCat("<tr", best ? " class=\"best\"" : b->meets_slo ? "" : " class=\"miss\"", ">",
                  Cell(StrCat(b->batch)), Cell(Fixed(b->roofline.seconds * 1e3, 2)),
                  Cell(b->roofline.compute_bound ? "compute" : "memory"), Cell(Fixed(b->efficiency, 3)),
                  Cell(Fixed(b->point.tpot_s * 1e3, 2)), Cell(Fixed(b->point.ttft_s * 1e3, 1)),
                  Cell(Fixed(b->point.e2e_s * 1e3, 0)), Cell(Fixed(b->point.req_s, 3)),
                  Cell(Fixed(b->tok_s, 1)), Cell(HumanBytes(b->memory_per_device)),
                  Cell(best ? "largest that meets" : b->meets_slo ? "meets" : "misses"), "</tr>\n");
    }
    h += "</table>\n";
  }

  if (r.feasible) {
    h += "<h2>Sites</h2>\n";
    h += StrCat("<p>At batch ", r.slo_batch, " a replica serves ", Fixed(r.replica_req_s, 3),
                " req/s within the targets (TPOT ", HumanSeconds(r.at_slo.point.tpot_s), ", TTFT ",
                HumanSeconds(r.at_slo.point.ttft_s), "); per device ", Fixed(r.device_req_s, 3),
                " req/s, ", Fixed(r.device_tok_s, 0), " tokens/s.</p>\n");
    h += "<table>\n<tr><th class=\"l\">site</th><th>share</th><th>peak req/s</th><th>replicas</th>"
         "<th>devices</th><th>nodes</th><th>USD/hour</th><th>storage</th><th>link Mbps</th>"
         "<th>transfer</th></tr>\n";
    for (const SitePlan& s : r.sites) {
      h += StrCat("<tr>", Cell(s.name, true), Cell(Fixed(s.share, 3)), Cell(Fixed(s.demand_req_s, 2)),
                  Cell(StrCat(s.replicas)), Cell(StrCat(s.devices)), Cell(StrCat(s.nodes)),
                  Cell(Money(s.cost_per_hour)), Cell(HumanBytes(s.storage_bytes)),
                  Cell(s.link_mbps ? Fixed(*s.link_mbps, 0) : "-"),
                  Cell(s.transfer_s ? HumanDuration(*s.transfer_s) : "-"), "</tr>\n");
    }
    h += StrCat("<tr><th class=\"l\">total</th><td></td>", Cell(Fixed(in.load.peak_req_s, 2)), "<td></td>",
                Cell(StrCat(r.total_devices)), "<td></td>", Cell(Money(r.cost_per_hour)),
                Cell(HumanBytes(r.storage_bytes)), "<td></td><td></td></tr>\n</table>\n");
    if (r.cost_per_hour) {
      h += StrCat("<p>Cost at the peak: ", Money(r.cost_per_hour), " per hour; ", Money(r.cost_per_1k_tokens),
                  " per 1K tokens (prompt + output); ", Money(r.cost_per_1k_output_tokens),
                  " per 1K output tokens.</p>\n");
      h += "<h2>Cost against load</h2>\n" + CostCharts(r);
    }
  }

  if (!in.calibration.points.empty()) {
    h += "<h2>Calibration</h2>\n<table>\n<tr><th class=\"l\">file</th><th class=\"l\">figure</th>"
         "<th>measured</th><th>modelled</th><th>factor</th></tr>\n";
    for (const CalibrationPoint& p : in.calibration.points) {
      h += StrCat("<tr>", Cell(p.file, true), Cell(p.what, true), Cell(Fixed(p.measured, 3)),
                  Cell(Fixed(p.modelled, 3)), Cell(Fixed(p.factor, 3)), "</tr>\n");
    }
    h += "</table>\n";
  }
  if (!r.notes.empty()) {
    h += "<h2>Notes</h2>\n<ul>\n";
    for (const std::string& n : r.notes) h += StrCat("<li class=\"note\">", XmlEscape(n), "</li>\n");
    h += "</ul>\n";
  }
  h += "<p class=\"note\">Formulas: docs/PLANNING.md in the swiftlet source.</p>\n</body></html>\n";
  return h;
}

}  // namespace swiftlet::plan
