// swiftlet plan: the capacity planner's flags (plan/planner.h does the
// arithmetic, plan/report_*.cc the outputs).
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/str_cat.h"
#include "perf/model_shape.h"
#include "plan/calibration.h"
#include "plan/hardware.h"
#include "plan/plan_flags.h"
#include "plan/planner.h"
#include "plan/presets.h"

namespace swiftlet::cli {
namespace {

// Exit status of a plan whose targets no batch meets (its report is still
// printed): scripts can tell "no plan" from "bad flags" (1, 2).
constexpr int kInfeasibleExit = 3;

struct PlanOptions {
  std::string model_path;
  std::string preset;
  std::string type = "Q8_0";
  bool type_given = false;
  std::string kv_type = "f16";
  int64_t context = 0;
  std::string hardware;
  std::string cpu_profile;
  std::string catalog;
  plan::HardwareOverrides overrides;
  double memory_reserve = 0.10;
  int tensor_parallel = 0;
  int64_t max_batch = 256;
  double rate = 0;
  int64_t streams = 0;
  double comment_rate = 0;
  int64_t languages = 1;
  bool languages_given = false;
  int64_t prompt_tokens = 64;
  int64_t output_tokens = 32;
  std::string slo = "ttft=500ms,tpot=100ms";
  std::string sites;
  std::string redundancy = "n";
  std::string link_mbps;
  int versions = 2;
  std::vector<std::string> calibrate;
  std::string efficiency;
  bool json = false;
  std::string html_path;
  bool list_hardware = false;
  bool list_presets = false;
};

absl::StatusOr<std::vector<plan::Hardware>> Catalog(const PlanOptions& o) {
  if (!o.catalog.empty()) return plan::LoadCatalogFile(o.catalog);
  return plan::ParseCatalog(plan::BuiltInCatalogText(), "built-in catalog");
}

int ListHardware(const PlanOptions& o) {
  auto catalog = Catalog(o);
  if (!catalog.ok()) return ReportError(catalog.status());
  std::printf("%-12s %-4s %9s %9s %11s %10s %9s  %s\n", "name", "kind", "memory", "GB/s",
              "fp16 TFLOPS", "int8 TOPS", "USD/hour", "description");
  for (const plan::Hardware& h : *catalog) {
    std::printf("%-12s %-4s %5.0f GiB %9.1f %11.2f %10.1f %9s  %s\n", h.name.c_str(),
                std::string(plan::DeviceKindName(h.kind)).c_str(),
                static_cast<double>(h.memory_bytes) / (1ull << 30), h.bandwidth_gbs, h.fp16_tflops,
                h.int8_tops, h.price_per_hour ? StrCat(*h.price_per_hour).c_str() : "-",
                h.description.c_str());
  }
  return 0;
}

int ListPresets() {
  for (const plan::ModelPreset& p : plan::ModelPresets()) {
    const ModelShape& s = p.shape;
    std::printf("%-15s %-5s %-15s %s, %lld layers, hidden %lld, %lld heads (%lld KV) x %lld, ffn %lld, "
                "vocab %lld, context %lld%s\n",
                std::string(p.name).c_str(), std::string(p.alias).c_str(), std::string(p.about).c_str(),
                s.arch.c_str(), static_cast<long long>(s.n_layer), static_cast<long long>(s.n_embd),
                static_cast<long long>(s.n_head), static_cast<long long>(s.n_head_kv),
                static_cast<long long>(s.head_dim), static_cast<long long>(s.n_ff),
                static_cast<long long>(s.n_vocab), static_cast<long long>(s.n_ctx_train),
                s.tied_embeddings ? ", tied head" : "");
  }
  return 0;
}

absl::StatusOr<plan::PlanInputs> BuildInputs(const PlanOptions& o) {
  plan::PlanInputs in;
  // The model.
  if (o.model_path.empty() == o.preset.empty()) {
    return absl::InvalidArgumentError("give exactly one of -m FILE.gguf and --preset NAME");
  }
  if (!o.model_path.empty()) {
    if (o.type_given) {
      return absl::InvalidArgumentError("--type applies to --preset; a model file has its own types");
    }
    SWIFTLET_ASSIGN_OR_RETURN(in.model, SizeModelFile(o.model_path));
    in.model_name = o.model_path;
  } else {
    SWIFTLET_ASSIGN_OR_RETURN(const plan::ModelPreset preset, plan::FindModelPreset(o.preset));
    auto sizing = SizeModelShape(preset.shape, o.type);
    if (!sizing.ok()) return absl::InvalidArgumentError(StrCat("--type: ", sizing.status().message()));
    in.model = *std::move(sizing);
    in.model_name = StrCat(preset.name, " (", preset.about, " shape)");
  }
  SWIFTLET_ASSIGN_OR_RETURN(in.kv_type, ParseKvType(o.kv_type));
  in.context = o.context;

  // The hardware.
  if (o.hardware.empty() == o.cpu_profile.empty()) {
    return absl::InvalidArgumentError(
        "give exactly one of --hardware NAME (see --list-hardware) and --cpu-profile FILE.json");
  }
  if (!o.hardware.empty()) {
    SWIFTLET_ASSIGN_OR_RETURN(const std::vector<plan::Hardware> catalog, Catalog(o));
    SWIFTLET_ASSIGN_OR_RETURN(in.hardware, plan::FindHardware(catalog, o.hardware));
  } else {
    SWIFTLET_ASSIGN_OR_RETURN(in.hardware, plan::LoadCpuProfileFile(o.cpu_profile));
  }
  SWIFTLET_RETURN_IF_ERROR(plan::ApplyOverrides(o.overrides, in.hardware));
  in.memory_reserve = o.memory_reserve;
  in.tensor_parallel = o.tensor_parallel;
  in.max_batch = o.max_batch;

  // The load.
  const bool live = o.streams > 0 || o.comment_rate > 0;
  if (live == (o.rate > 0)) {
    return absl::InvalidArgumentError(
        "give the peak load as --rate REQ_S, or as --streams S --comment-rate C [--languages K]");
  }
  if (live && (o.streams <= 0 || o.comment_rate <= 0)) {
    return absl::InvalidArgumentError("--streams and --comment-rate go together");
  }
  if (!live && o.languages_given) {
    return absl::InvalidArgumentError("--languages applies to --streams (live translation), not --rate");
  }
  in.load.peak_req_s = o.rate;
  in.load.streams = o.streams;
  in.load.comment_rate = o.comment_rate;
  in.load.languages = o.languages;
  in.load.prompt_tokens = o.prompt_tokens;
  in.load.output_tokens = o.output_tokens;
  SWIFTLET_ASSIGN_OR_RETURN(in.slo, plan::ParseSlo(o.slo));

  // Sites and shipping.
  SWIFTLET_ASSIGN_OR_RETURN(in.sites, plan::ParseSites(o.sites));
  SWIFTLET_ASSIGN_OR_RETURN(in.redundancy, plan::ParseRedundancy(o.redundancy));
  if (!o.link_mbps.empty()) {
    SWIFTLET_ASSIGN_OR_RETURN(in.link_mbps, plan::ParseLinkMbps(o.link_mbps, in.sites));
  }
  in.versions = o.versions;

  // Efficiency: calibration files first, then factors given by hand.
  if (o.max_batch < 1 || o.max_batch > plan::kMaxPlanBatch) {
    return absl::InvalidArgumentError(
        StrCat("--max-batch: ", o.max_batch, " is outside 1..", plan::kMaxPlanBatch));
  }
  if (!o.calibrate.empty()) {
    SWIFTLET_ASSIGN_OR_RETURN(in.calibration, plan::CalibrateFromFiles(o.calibrate, o.max_batch));
    in.calibration_files = o.calibrate;
  }
  if (!o.efficiency.empty()) {
    SWIFTLET_ASSIGN_OR_RETURN(const plan::EfficiencyOverrides e, plan::ParseEfficiency(o.efficiency));
    if (e.decode) in.calibration.efficiency.decode = {{1, *e.decode}};
    if (e.prefill) in.calibration.efficiency.prefill = *e.prefill;
    if (e.serving) in.calibration.efficiency.serving = *e.serving;
  }
  return in;
}

int RunPlan(const PlanOptions& o) {
  if (o.list_hardware) return ListHardware(o);
  if (o.list_presets) return ListPresets();
  auto inputs = BuildInputs(o);
  if (!inputs.ok()) return ReportError(inputs.status());
  auto report = plan::MakePlan(*inputs);
  if (!report.ok()) return ReportError(report.status());
  if (!o.html_path.empty()) {
    std::ofstream out(o.html_path, std::ios::binary | std::ios::trunc);
    out << plan::PlanHtml(*report);
    out.close();
    if (!out) return ReportError(StrCat("--html: cannot write ", o.html_path));
  }
  const std::string text = o.json ? plan::PlanJson(*report) : plan::FormatPlanText(*report);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return report->feasible ? 0 : kInfeasibleExit;
}

template <typename T>
void AddOverride(CLI::App* cmd, const std::string& flag, std::optional<T>& target,
                 const std::string& help) {
  cmd->add_option_function<T>(flag, [&target](const T& v) { target = v; }, help);
}

}  // namespace

Command AddPlanCommand(CLI::App& parent) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "plan",
      "Capacity plan: devices per site for a model at a peak load within latency targets, its "
      "cost, and the time to ship the model (formulas: docs/PLANNING.md)");
  cmd->footer(
      "Exit status: 0 with a plan, 3 when no batch size meets the targets (the report says why), "
      "1 or 2 on bad input.");
  // The model.
  cmd->add_option("-m,--model", o->model_path, "GGUF model (only its header is read)");
  cmd->add_option("--preset", o->preset,
                  "Model shape instead of a file: 0.5b, 1.5b, 7b, 8b, 14b, 32b, 70b, tinyllama-1.1b, "
                  "smollm2-135m, qwen3-0.6b (see --list-presets)");
  cmd->add_option_function<std::string>(
      "--type",
      [o](const std::string& v) {
        o->type = v;
        o->type_given = true;
      },
      "Weight format of a --preset: F16, Q8_0 (default), Q4_K_M, ...");
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f16 (default), f32 or q8_0");
  cmd->add_option("--context", o->context,
                  "KV tokens held per sequence (default: prompt + output tokens)")
      ->check(CLI::Range(int64_t{1}, plan::kMaxTokens));
  // The hardware.
  cmd->add_option("--hardware", o->hardware, "Device from the catalog (see --list-hardware)");
  cmd->add_option("--cpu-profile", o->cpu_profile,
                  "A CPU node as measured by `swiftlet bench engine --json` (instead of --hardware)");
  cmd->add_option("--catalog", o->catalog, "Hardware catalog file instead of the built-in one");
  AddOverride(cmd, "--memory-gib", o->overrides.memory_gib, "Override: device memory, GiB");
  AddOverride(cmd, "--bandwidth-gbs", o->overrides.bandwidth_gbs, "Override: memory bandwidth, GB/s");
  AddOverride(cmd, "--fp16-tflops", o->overrides.fp16_tflops,
              "Override: float peak, TFLOPS (fp16 tensor cores; fp32 FMA on CPUs)");
  AddOverride(cmd, "--int8-tops", o->overrides.int8_tops, "Override: int8 peak, TOPS");
  AddOverride(cmd, "--price-per-hour", o->overrides.price_per_hour, "Override: USD per device-hour");
  AddOverride(cmd, "--devices-per-node", o->overrides.devices_per_node,
              "Override: devices in one node (and at most in one replica)");
  cmd->add_option("--memory-reserve", o->memory_reserve,
                  "Share of device memory kept for the runtime and activations (default 0.1)");
  cmd->add_option("--tensor-parallel", o->tensor_parallel,
                  "Devices per replica (default: the fewest that hold the model)")
      ->check(CLI::Range(1, plan::kMaxDevicesPerNode));
  cmd->add_option("--max-batch", o->max_batch,
                  "Sequences a replica decodes at once, at most (default 256; serve's --max-running)");
  // The load.
  cmd->add_option("--rate", o->rate, "Peak load, requests per second, all sites together");
  cmd->add_option("--streams", o->streams, "Live translation: concurrent live streams at the peak");
  cmd->add_option("--comment-rate", o->comment_rate, "Live translation: comments per second per stream");
  cmd->add_option_function<int64_t>(
      "--languages",
      [o](int64_t v) {
        o->languages = v;
        o->languages_given = true;
      },
      "Live translation: target languages per comment (default 1); they share one prefill");
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "Prompt tokens per request (default 64)");
  cmd->add_option("--output-tokens", o->output_tokens, "Output tokens per request (default 32)");
  cmd->add_option("--slo", o->slo, "Targets, e.g. ttft=500ms,tpot=100ms[,e2e=2s] (default as shown)");
  // Sites.
  cmd->add_option("--sites", o->sites, "Sites and their shares of the peak, e.g. hk:0.5,sg:0.3,fra:0.2");
  cmd->add_option("--redundancy", o->redundancy, "Spare replicas per site: n (default), n+K or 2n");
  cmd->add_option("--link-mbps", o->link_mbps,
                  "Link to the sites for shipping the model, Mbps: one figure or hk:1000,sg:500,...");
  cmd->add_option("--versions", o->versions, "Model versions kept per node (default 2)");
  // Efficiency.
  cmd->add_option("--calibrate", o->calibrate,
                  "bench engine / bench JSON files to fit efficiency factors from (repeatable; a "
                  "bench file follows the bench engine file of its model and machine)");
  cmd->add_option("--efficiency", o->efficiency,
                  "Factors by hand, e.g. decode=0.6,prefill=0.5,serving=0.9 (after --calibrate)");
  // Outputs.
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the text report");
  cmd->add_option("--html", o->html_path, "Also write a self-contained HTML report with charts to FILE");
  cmd->add_flag("--list-hardware", o->list_hardware, "List the hardware catalog and exit");
  cmd->add_flag("--list-presets", o->list_presets, "List the model presets and exit");
  return {cmd, [o] { return RunPlan(*o); }};
}

}  // namespace swiftlet::cli
