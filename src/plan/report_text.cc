// The plan as text for a terminal: the inputs as understood, the memory
// arithmetic, a table by batch size, the sites, the cost, the caveats.
#include <cstdarg>
#include <cstdio>

#include "core/str_cat.h"
#include "plan/planner.h"
#include "plan/report_format.h"

namespace swiftlet::plan {
namespace {

std::string Line(const char* label, const std::string& text) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%-11s", label);
  return StrCat(buf, text, "\n");
}

std::string Row(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string Row(const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  return buf;
}

std::string EfficiencyText(const PlanReport& r) {
  const Calibration& c = r.inputs.calibration;
  const Efficiency& e = c.efficiency;
  std::string decode;
  if (e.decode.empty()) {
    decode = "decode 1";
  } else {
    for (const auto& [batch, f] : e.decode) {
      decode += StrCat(decode.empty() ? "decode " : ", ", "b", batch, " ", Fixed(f, 3));
    }
  }
  std::string out = StrCat(decode, "; prefill ", Fixed(e.prefill, 3), "; serving ", Fixed(e.serving, 3));
  if (!r.inputs.calibration_files.empty()) {
    std::string machines;
    for (const std::string& m : c.machines) machines += StrCat(machines.empty() ? "" : "; ", m);
    out += StrCat(" (calibrated from ", r.inputs.calibration_files.size(), " file",
                  r.inputs.calibration_files.size() == 1 ? "" : "s",
                  machines.empty() ? "" : StrCat(" on ", machines), ")");
  }
  return out;
}

}  // namespace

std::string FormatPlanText(const PlanReport& r) {
  const PlanInputs& in = r.inputs;
  const ModelSizing& model = in.model;
  const ModelShape& shape = model.shape;
  const Hardware& hw = in.hardware;
  const LoadSpec& load = in.load;
  std::string out;

  out += StrCat("swiftlet plan: ", in.model_name, ", ", model.weight_format, ", on ", hw.name,
                hw.description.empty() ? "" : StrCat(" - ", hw.description), "\n\n");
  out += Line("model", StrCat(shape.arch, ", ", HumanCount(model.cost.n_params), " parameters, ",
                              shape.n_layer, " layers, ", shape.n_head, " heads (", shape.n_head_kv,
                              " KV) x ", shape.head_dim, "; weights ", HumanBytes(model.weights_bytes),
                              ", ", HumanBytes(model.cost.weight_bytes_per_token),
                              " read per decode step"));
  out += Line("kv cache", StrCat(NameOf(in.kv_type), ": ", Grouped(r.kv_bytes_per_token),
                                 " bytes per token; ", HumanBytes(r.kv_bytes_per_sequence),
                                 " per sequence of ", r.context, " tokens"));
  out += Line("device", StrCat(HumanBytes(hw.memory_bytes), ", ", Fixed(hw.bandwidth_gbs, 0),
                               " GB/s, int8 ", Fixed(hw.int8_tops, 1), " TOPS, ",
                               hw.kind == DeviceKind::kGpu ? "fp16 " : "fp32 ",
                               Fixed(hw.fp16_tflops, 2), " TFLOPS, ", Money(hw.price_per_hour),
                               "/h each"));
  out += Line("memory", StrCat(HumanBytes(r.usable_bytes_per_device), " usable per device (",
                               Fixed(in.memory_reserve * 100, 0), "% reserved); ",
                               r.tensor_parallel, " device", r.tensor_parallel == 1 ? "" : "s",
                               " per replica, ", HumanBytes(r.weights_bytes_per_device),
                               " of weights each; ", Grouped(static_cast<uint64_t>(r.max_concurrency)),
                               " sequences fit, batch limit ", r.batch_limit));
  std::string load_text =
      load.streams > 0
          ? StrCat(load.streams, " streams x ", Fixed(load.comment_rate, 3), " comments/s x ",
                   load.languages, " languages = ", Fixed(load.peak_req_s, 2), " req/s at the peak")
          : StrCat(Fixed(load.peak_req_s, 2), " req/s at the peak");
  out += Line("load", StrCat(load_text, "; ", load.prompt_tokens, " prompt + ", load.output_tokens,
                             " output tokens; targets ", SloText(in.slo)));
  out += Line("efficiency", EfficiencyText(r));
  if (!r.batches.empty()) {
    out += Line("prefill", StrCat(load.prompt_tokens, " tokens: roofline ",
                                  HumanSeconds(r.prefill_roofline.seconds), " (",
                                  r.prefill_roofline.compute_bound ? "compute" : "memory",
                                  "-bound), calibrated ", HumanSeconds(r.prefill_s)));
    out += "\n";
    out += Row("%6s %9s %8s %5s %9s %9s %9s %10s %10s %11s  %s\n", "batch", "roof ms", "bound",
               "eff", "TPOT ms", "TTFT ms", "e2e ms", "req/s", "tok/s", "mem/device", "SLO");
    for (const BatchRow* row : TableRows(r)) {
      const ServingPoint& p = row->point;
      out += Row("%6lld %9.2f %8s %5.2f %9.2f %9.1f %9.0f %10.3f %10.1f %11s  %s\n",
                 static_cast<long long>(row->batch), row->roofline.seconds * 1e3,
                 row->roofline.compute_bound ? "compute" : "memory", row->efficiency, p.tpot_s * 1e3,
                 p.ttft_s * 1e3, p.e2e_s * 1e3, p.req_s, row->tok_s,
                 HumanBytes(row->memory_per_device).c_str(),
                 row->batch == r.slo_batch ? "best" : row->meets_slo ? "ok" : "miss");
    }
  }
  out += "\n";
  if (!r.feasible) {
    out += StrCat("NOT FEASIBLE: ", r.infeasible_reason, "\n");
  } else {
    out += StrCat("at the targets: batch ", r.slo_batch, ", TPOT ", HumanSeconds(r.at_slo.point.tpot_s),
                  ", TTFT ", HumanSeconds(r.at_slo.point.ttft_s), "; ", Fixed(r.replica_req_s, 3),
                  " req/s per replica, ", Fixed(r.device_req_s, 3), " req/s and ",
                  Fixed(r.device_tok_s, 0), " tok/s (prompt + output) per device\n\n");
    out += Row("%-12s %6s %11s %9s %8s %6s %10s %10s %10s %10s\n", "site", "share", "peak req/s",
               "replicas", "devices", "nodes", "$/hour", "storage", "link Mbps", "transfer");
    for (const SitePlan& s : r.sites) {
      out += Row("%-12s %6.3f %11.2f %9lld %8lld %6lld %10s %10s %10s %10s\n", s.name.c_str(),
                 s.share, s.demand_req_s, static_cast<long long>(s.replicas),
                 static_cast<long long>(s.devices), static_cast<long long>(s.nodes),
                 Money(s.cost_per_hour).c_str(), HumanBytes(s.storage_bytes).c_str(),
                 s.link_mbps ? Fixed(*s.link_mbps, 0).c_str() : "-",
                 s.transfer_s ? HumanDuration(*s.transfer_s).c_str() : "-");
    }
    out += Row("%-12s %6s %11.2f %9s %8lld %6s %10s %10s\n", "total", "", load.peak_req_s, "",
               static_cast<long long>(r.total_devices), "", Money(r.cost_per_hour).c_str(),
               HumanBytes(r.storage_bytes).c_str());
    out += "\n";
    if (r.cost_per_hour) {
      out += Line("cost", StrCat(Money(r.cost_per_hour), " per hour; ", Money(r.cost_per_1k_tokens),
                                 " per 1K tokens (prompt + output), ",
                                 Money(r.cost_per_1k_output_tokens), " per 1K output tokens, at the peak"));
    }
    out += Line("storage", StrCat(HumanBytes(model.file_bytes), " per model file x ", in.versions,
                                  " version", in.versions == 1 ? "" : "s", " per node"));
  }
  if (!in.calibration.points.empty()) {
    out += "\ncalibration (factor = measured / modelled):\n";
    for (const CalibrationPoint& p : in.calibration.points) {
      out += StrCat("  ", p.file, ": ", p.what, ": ", Fixed(p.measured, 3), " / ", Fixed(p.modelled, 3),
                    " = ", Fixed(p.factor, 3), "\n");
    }
  }
  if (!r.notes.empty()) {
    out += "\nnotes:\n";
    for (const std::string& n : r.notes) out += StrCat("  - ", n, "\n");
  }
  return out;
}

}  // namespace swiftlet::plan
