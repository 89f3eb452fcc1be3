// swiftlet tools drive: open-loop Poisson load straight into the engine
// (no HTTP), swept over arrival rates, reported with the latency
// definitions of DESIGN.md: the engine's capacity without the transport's
// costs. The arrivals, prompts and statistics are the load generator's
// (loadgen/), the driver perf/'s; this file joins them.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/duration.h"
#include "core/str_cat.h"
#include "engine/engine.h"
#include "loadgen/arrival_schedule.h"
#include "loadgen/load_stats.h"
#include "loadgen/sample_words.h"
#include "model/model.h"
#include "perf/load_driver.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

// The driver's records as the load generator's timelines.
std::vector<loadgen::RequestTimeline> Timelines(const std::vector<RequestRecord>& records) {
  std::vector<loadgen::RequestTimeline> out;
  out.reserve(records.size());
  for (const RequestRecord& r : records) {
    loadgen::RequestTimeline t;
    t.warmup = r.warmup;
    t.arrival_ns = r.arrival_ns;
    t.first_token_ns = r.first_token_ns;
    t.finish_ns = r.finish_ns;
    t.token_times_ns = r.token_times_ns;
    t.output_tokens = r.output_tokens;
    t.outcome = r.refused        ? loadgen::RequestOutcome::kRefused
                : r.finished_ok() ? loadgen::RequestOutcome::kFinished
                                  : loadgen::RequestOutcome::kFailed;
    t.refused_after_ns = r.refused_after_ns;
    out.push_back(std::move(t));
  }
  return out;
}

struct DriveOptions {
  std::string model_path;
  std::vector<double> rates;         // requests/s, a sweep
  int64_t requests = 0;              // per rate; 0: max(40, 15 s of arrivals)
  int64_t prompt_words = 40;
  int64_t shared_prefix_words = 0;   // an instruction shared by every request
  int64_t output_tokens = 32;
  std::string slo = "ttft=500ms,tpot=100ms";
  double burstiness = 1;
  int threads = 0;
  uint64_t kv_memory_bytes = 0;      // 0: the engine's default
  int64_t step_tokens = 0;           // 0: the engine's default
  int64_t chunk_tokens = 0;
  uint64_t seed = 1;
  std::string json_path;
};

int RunDrive(const DriveOptions& o) {
  auto slo_list = ParseDurationList(o.slo, {"ttft", "tpot", "e2e"});
  if (!slo_list.ok()) return ReportError(StrCat("--slo: ", slo_list.status().message()));
  loadgen::SloTargets slo;
  for (const auto& [key, ns] : *slo_list) {
    (key == "ttft" ? slo.ttft_ns : key == "tpot" ? slo.tpot_ns : slo.e2e_ns) = ns;
  }
  if (o.rates.empty()) return ReportError("--rate: give at least one rate");
  for (double r : o.rates) {
    if (!(r > 0) || r > 10000) return ReportError("--rate: each rate must be in (0, 10000] requests/s");
  }

  auto model = LoadModel(o.model_path, ComputeDevice::Cpu());
  if (!model.ok()) return ReportError(model.status());
  auto tokenizer = Tokenizer::FromGguf((*model)->file());
  if (!tokenizer.ok()) return ReportError(tokenizer.status());
  EngineConfig cfg;
  cfg.threads = o.threads;
  cfg.kv_memory_bytes = o.kv_memory_bytes;
  if (o.step_tokens > 0) cfg.scheduler.step_tokens = o.step_tokens;
  if (o.chunk_tokens > 0) cfg.scheduler.chunk_tokens = o.chunk_tokens;
  cfg.slo_interactive = {slo.ttft_ns, slo.tpot_ns};
  cfg.context = std::min<int64_t>((*model)->config().n_ctx_train, 4096);
  auto engine = Engine::Create(**model, **tokenizer, cfg);
  if (!engine.ok()) return ReportError(engine.status());
  Engine& e = **engine;
  std::fprintf(stderr, "swiftlet: calibrating the engine\n");
  e.Start();

  // Prompts: an optional instruction shared by every request (the
  // translation workload's shape: the prefix cache should make it free),
  // then a fresh random comment per request.
  std::mt19937_64 shared_rng(o.seed);
  const std::string shared = o.shared_prefix_words > 0 ? loadgen::RandomWords(shared_rng, o.shared_prefix_words) + "\n" : "";
  int64_t prompt_tokens_sum = 0, prompt_count = 0;
  auto make = [&](int64_t index) {
    std::mt19937_64 rng(o.seed * 1000003 + static_cast<uint64_t>(index));
    Request r;
    r.prompt = (*tokenizer)->Encode(shared + loadgen::RandomWords(rng, o.prompt_words), (*tokenizer)->add_bos_token());
    prompt_tokens_sum += static_cast<int64_t>(r.prompt.size());
    ++prompt_count;
    r.options.sampling.temperature = 0;
    r.options.max_tokens = static_cast<int32_t>(o.output_tokens);
    r.options.ignore_eos = true;
    return r;
  };

  nlohmann::json runs = nlohmann::json::array();
  std::printf("%8s %8s %8s %8s %10s %10s %10s %10s %10s %8s %10s\n", "rate", "offered", "done",
              "refused", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99", "goodput", "attain",
              "refuse_max");
  for (double rate : o.rates) {
    loadgen::ScheduleOptions schedule;
    schedule.rate_per_s = rate;
    schedule.burstiness = o.burstiness;
    schedule.max_requests = o.requests > 0 ? o.requests : std::max<int64_t>(40, static_cast<int64_t>(rate * 15));
    schedule.seed = o.seed + static_cast<uint64_t>(rate * 1000);
    auto arrivals = loadgen::OpenLoopSchedule(schedule);
    if (!arrivals.ok()) return ReportError(StrCat("--rate/--burstiness: ", arrivals.status().message()));
    OpenLoopPlan plan;
    plan.arrivals_ns = *std::move(arrivals);
    plan.warmup_requests = std::min(static_cast<int64_t>(plan.arrivals_ns.size()) / 10, int64_t{8});
    plan.make_request = make;
    if (absl::Status s = ValidateOpenLoopPlan(plan); !s.ok()) return ReportError(s);
    std::fprintf(stderr, "swiftlet: %g req/s, %zu requests\n", rate, plan.arrivals_ns.size());
    const std::vector<loadgen::RequestTimeline> timelines =
        Timelines(RunOpenLoop(e, SystemClock(), SystemSleep(), plan));
    const loadgen::LoadReport rep = loadgen::Summarize(timelines, slo, loadgen::MeasurementWindowNs(timelines));
    std::printf("%8.1f %8lld %8lld %8lld %9.0fms %9.0fms %9.1fms %9.1fms %8.2f/s %7.1f%% %8.1fms\n",
                rate, static_cast<long long>(rep.offered), static_cast<long long>(rep.finished),
                static_cast<long long>(rep.refused), Ms(rep.ttft.p50_ns), Ms(rep.ttft.p99_ns),
                Ms(rep.tpot.p50_ns), Ms(rep.tpot.p99_ns), rep.goodput_per_s, rep.slo_attainment_pct,
                Ms(static_cast<double>(rep.max_refusal_decision_ns)));
    std::fflush(stdout);
    runs.push_back({{"rate_per_s", rate},
                    {"offered", rep.offered},
                    {"finished", rep.finished},
                    {"refused", rep.refused},
                    {"errors", rep.errors},
                    {"ttft_p50_ms", Ms(rep.ttft.p50_ns)},
                    {"ttft_p99_ms", Ms(rep.ttft.p99_ns)},
                    {"tpot_p50_ms", Ms(rep.tpot.p50_ns)},
                    {"tpot_p99_ms", Ms(rep.tpot.p99_ns)},
                    {"e2e_p50_ms", Ms(rep.e2e.p50_ns)},
                    {"throughput_req_s", rep.request_throughput_per_s},
                    {"output_tok_s", rep.output_token_throughput_per_s},
                    {"goodput_req_s", rep.goodput_per_s},
                    {"attainment_pct", rep.slo_attainment_pct},
                    {"max_refusal_decision_ms", Ms(static_cast<double>(rep.max_refusal_decision_ns))}});
  }
  const EngineState st = e.state();
  e.Stop();
  const double mean_prompt = prompt_count > 0 ? static_cast<double>(prompt_tokens_sum) / prompt_count : 0;
  std::printf("mean prompt %.1f tokens; prefix cache hits %lld of %lld queried tokens; %lld preemptions\n",
              mean_prompt, static_cast<long long>(st.prefix_hits_tokens),
              static_cast<long long>(st.prefix_queries_tokens), static_cast<long long>(st.preemptions));
  if (!o.json_path.empty()) {
    nlohmann::json j = {{"model", o.model_path},
                        {"slo", o.slo},
                        {"prompt_words", o.prompt_words},
                        {"shared_prefix_words", o.shared_prefix_words},
                        {"output_tokens", o.output_tokens},
                        {"mean_prompt_tokens", mean_prompt},
                        {"runs", runs}};
    FILE* f = std::fopen(o.json_path.c_str(), "w");
    if (f == nullptr) return ReportError(StrCat("--json: cannot write ", o.json_path));
    const std::string text = j.dump(2) + "\n";
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
  return 0;
}

}  // namespace

Command AddDriveCommand(CLI::App& parent) {
  auto o = std::make_shared<DriveOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "drive", "Open-loop Poisson load straight into the engine (no HTTP), swept over rates");
  cmd->add_option("-m,--model", o->model_path, "GGUF model")->required();
  cmd->add_option("--rate", o->rates, "Arrival rates, requests/s, comma-separated")
      ->delimiter(',')
      ->required();
  cmd->add_option("--requests", o->requests, "Requests per rate (default: 15 s of arrivals, at least 40)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--prompt-words", o->prompt_words, "Words per prompt (default 40)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->add_option("--shared-prefix-words", o->shared_prefix_words,
                  "Words of an instruction shared by every prompt (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  cmd->add_option("--output-tokens", o->output_tokens, "Tokens per request, EOS ignored (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  cmd->add_option("--slo", o->slo, "Targets, e.g. ttft=500ms,tpot=100ms[,e2e=2s]");
  cmd->add_option("--burstiness", o->burstiness, "Gamma arrivals: 1 is Poisson (default)")
      ->check(CLI::Range(0.01, 100.0));
  cmd->add_option("--threads,-t", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-memory", o->kv_memory_bytes, "KV cache bytes (default: a share of free RAM)")
      ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 40));
  cmd->add_option("--step-tokens", o->step_tokens, "Tokens per forward pass at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  cmd->add_option("--chunk-tokens", o->chunk_tokens, "Prefill tokens per sequence per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  cmd->add_option("--seed", o->seed, "Seed of prompts and arrivals");
  cmd->add_option("--json", o->json_path, "Also write the figures to this JSON file");
  return {cmd, [o] { return RunDrive(*o); }};
}

}  // namespace swiftlet::cli
