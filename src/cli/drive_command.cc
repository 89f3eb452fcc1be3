// swiftlet tools drive: open-loop Poisson load straight into the engine
// (no HTTP), swept over arrival rates, reported with the latency
// definitions of DESIGN.md. The in-process stand-in for `swiftlet bench`
// against `swiftlet serve` until those exist; also the way to separate
// engine capacity from transport costs later.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "core/duration.h"
#include "core/sample_words.h"
#include "core/str_cat.h"
#include "engine/engine.h"
#include "engine/load_driver.h"
#include "model/model.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {

int RunDrive(const DriveOptions& o) {
  auto slo_list = ParseDurationList(o.slo, {"ttft", "tpot", "e2e"});
  if (!slo_list.ok()) return ReportError(StrCat("--slo: ", slo_list.status().message()));
  SloTargets slo;
  for (const auto& [key, ns] : *slo_list) {
    (key == "ttft" ? slo.ttft_ns : key == "tpot" ? slo.tpot_ns : slo.e2e_ns) = ns;
  }
  if (o.rates.empty()) return ReportError("--rate: give at least one rate");
  for (double r : o.rates) {
    if (!(r > 0) || r > 10000) return ReportError("--rate: each rate must be in (0, 10000] requests/s");
  }

  auto model = Model::Load(o.model_path);
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
  const std::string shared = o.shared_prefix_words > 0 ? RandomWords(shared_rng, o.shared_prefix_words) + "\n" : "";
  int64_t prompt_tokens_sum = 0, prompt_count = 0;
  auto make = [&](int64_t index) {
    std::mt19937_64 rng(o.seed * 1000003 + static_cast<uint64_t>(index));
    Request r;
    r.prompt = (*tokenizer)->Encode(shared + RandomWords(rng, o.prompt_words), (*tokenizer)->add_bos_token());
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
    OpenLoopPlan plan;
    plan.rate_per_s = rate;
    plan.burstiness = o.burstiness;
    plan.requests = o.requests > 0 ? o.requests : std::max<int64_t>(40, static_cast<int64_t>(rate * 15));
    plan.warmup_requests = std::min(plan.requests / 10, int64_t{8});
    plan.seed = o.seed + static_cast<uint64_t>(rate * 1000);
    plan.make_request = make;
    if (absl::Status s = ValidateOpenLoopPlan(plan); !s.ok()) return ReportError(s);
    std::fprintf(stderr, "swiftlet: %g req/s, %lld requests\n", rate, static_cast<long long>(plan.requests));
    const std::vector<RequestRecord> records = RunOpenLoop(e, SystemClock(), SystemSleep(), plan);
    const LoadReport rep = Summarize(records, slo, MeasurementWindowNs(records));
    auto ms = [](double ns) { return ns / 1e6; };
    std::printf("%8.1f %8lld %8lld %8lld %9.0fms %9.0fms %9.1fms %9.1fms %8.2f/s %7.1f%% %8.1fms\n",
                rate, static_cast<long long>(rep.offered), static_cast<long long>(rep.finished),
                static_cast<long long>(rep.refused), ms(rep.ttft.p50_ns), ms(rep.ttft.p99_ns),
                ms(rep.tpot.p50_ns), ms(rep.tpot.p99_ns), rep.goodput_per_s, rep.slo_attainment_pct,
                ms(static_cast<double>(rep.max_refusal_decision_ns)));
    std::fflush(stdout);
    runs.push_back({{"rate_per_s", rate},
                    {"offered", rep.offered},
                    {"finished", rep.finished},
                    {"refused", rep.refused},
                    {"errors", rep.errors},
                    {"ttft_p50_ms", ms(rep.ttft.p50_ns)},
                    {"ttft_p99_ms", ms(rep.ttft.p99_ns)},
                    {"tpot_p50_ms", ms(rep.tpot.p50_ns)},
                    {"tpot_p99_ms", ms(rep.tpot.p99_ns)},
                    {"e2e_p50_ms", ms(rep.e2e.p50_ns)},
                    {"throughput_req_s", rep.request_throughput_per_s},
                    {"output_tok_s", rep.output_token_throughput_per_s},
                    {"goodput_req_s", rep.goodput_per_s},
                    {"attainment_pct", rep.slo_attainment_pct},
                    {"max_refusal_decision_ms", ms(static_cast<double>(rep.max_refusal_decision_ns))}});
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

}  // namespace swiftlet::cli
