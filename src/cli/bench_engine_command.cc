// swiftlet bench engine: runs engine/engine_bench.h and prints its report as
// a table or one JSON object on stdout; progress goes to stderr.
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "core/number_format.h"
#include "core/str_cat.h"
#include "model/forward_context.h"
#include "perf/engine_bench.h"

namespace swiftlet::cli {
namespace {

struct BenchEngineOptions {
  std::string model_path;
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  std::vector<int64_t> batch_sizes = {1, 4, 16};
  int threads = 0;  // 0: all physical cores.
  std::string device = "cpu";
  int repeat = 3;
  bool json = false;
  bool quick_limits = false;  // Millisecond machine-limit runs, for tests.
  DecodeSampling sampling;
};

// "greedy", or the draw's settings as the API names them.
std::string DecodeLine(const EngineBenchReport& r) {
  if (r.sampling.greedy()) return "greedy (each row's argmax on the backend)";
  const DecodeSampling& p = r.sampling;
  std::string s = StrCat("sampled on the host (", r.host_threads, " threads): temperature ", Fixed(p.temperature, 2));
  if (p.top_k > 0) s += StrCat(", top_k ", p.top_k);
  if (p.top_p < 1.0f) s += StrCat(", top_p ", Fixed(p.top_p, 2));
  if (p.min_p > 0.0f) s += StrCat(", min_p ", Fixed(p.min_p, 2));
  return s;
}


std::string TypesLine(const ModelCost& cost) {
  std::string s;
  for (const TensorTypeTotal& t : cost.types) {
    s += StrCat(s.empty() ? "" : ", ", NameOf(t.type), " x", t.tensors);
  }
  return s;
}

void PrintTable(const EngineBenchReport& r) {
  const MachineLimits& m = r.limits;
  std::printf(
      "machine  %s, %d threads, kernels %s: read %.1f GB/s (%s, best of %d), int8 %.0f GOPS (%s), "
      "fp32 %.0f GFLOPS (%s)\n",
      r.cpu.c_str(), m.threads, r.isa.c_str(), m.read_bandwidth_gbs, m.read_kernel.c_str(),
      m.read_measurements, m.int8_peak_gops,
      m.int8_kernel.c_str(), m.fp32_peak_gflops, m.fp32_kernel.c_str());
  std::printf("model    %s: %s, %s parameters, %s; %s of weights read per token\n",
              std::filesystem::path(r.model_path).filename().c_str(), r.arch.c_str(),
              HumanCount(r.cost.n_params).c_str(), TypesLine(r.cost).c_str(),
              HumanBytes(r.cost.weight_bytes_per_token).c_str());
  std::printf("decode   %s\n", DecodeLine(r).c_str());
  // Sampled decode adds a column: the host's draw, µs a step.
  const bool draws = !r.sampling.greedy();
  std::printf("%-14s %10s %12s %11s  %s\n", "test", "tok/s", "limit tok/s", "% of limit",
              draws ? "bound    draw us/step" : "bound");
  for (const EngineBenchResult& x : r.results) {
    const char* bound = x.compute_bound ? "compute" : "memory";
    std::string draw;
    if (draws && !x.prompt) {
      char cell[32];
      std::snprintf(cell, sizeof(cell), "%*s%13.1f", 7 - static_cast<int>(std::strlen(bound)), "",
                    x.draw_us_per_step);
      draw = cell;
    }
    std::printf("%-14s %10.2f %12.2f %10.1f%%  %s%s\n", x.test.c_str(), x.tok_s, x.limit_tok_s,
                x.pct_of_limit, bound, draw.c_str());
  }
}

void PrintJson(const EngineBenchReport& r) {
  const MachineLimits& m = r.limits;
  nlohmann::json types = nlohmann::json::object();
  for (const TensorTypeTotal& t : r.cost.types) {
    types[std::string(NameOf(t.type))] = {{"tensors", t.tensors}, {"bytes", t.bytes}};
  }
  nlohmann::json results = nlohmann::json::array();
  for (const EngineBenchResult& x : r.results) {
    results.push_back({{"test", x.test},
                       {"draw_us_per_step", x.draw_us_per_step},
                       {"tok_s", x.tok_s},
                       {"pct_of_limit", x.pct_of_limit},
                       {"limit_tok_s", x.limit_tok_s},
                       {"bound", x.compute_bound ? "compute" : "memory"},
                       {"memory_bound_tok_s", x.memory_bound_tok_s},
                       {"compute_bound_tok_s", x.compute_bound_tok_s},
                       {"runs", x.runs},
                       {"prompt", x.prompt},
                       {"batch", x.batch},
                       {"tokens_per_pass", x.tokens_per_pass},
                       {"mean_context", x.mean_context}});
  }
  const nlohmann::json j = {{"machine",
                             {{"cpu", r.cpu},
                              {"threads", m.threads},
                              {"isa", r.isa},
                              {"read_bandwidth_gbs", m.read_bandwidth_gbs},
                              {"read_kernel", m.read_kernel},
                              {"read_measurements", m.read_measurements},
                              {"int8_peak_gops", m.int8_peak_gops},
                              {"fp32_peak_gflops", m.fp32_peak_gflops},
                              {"int8_kernel", m.int8_kernel},
                              {"fp32_kernel", m.fp32_kernel},
                              {"llc_bytes", m.llc_bytes},
                              {"read_buffer_bytes", m.read_buffer_bytes},
                              {"memory_bytes", PhysicalMemoryBytes()}}},
                            {"model",
                             {{"path", r.model_path},
                              {"arch", r.arch},
                              {"n_params", r.cost.n_params},
                              {"weight_bytes_per_token", r.cost.weight_bytes_per_token},
                              {"types", types},
                              {"kv_type", std::string(NameOf(r.kv_type))},
                              {"int8_macs_per_token", r.cost.int8_macs_per_token},
                              {"float_macs_per_token", r.cost.float_macs_per_token},
                              {"attn_macs_per_position", r.cost.attn_macs_per_position},
                              {"shape",
                               {{"arch", r.shape.arch},
                                {"n_vocab", r.shape.n_vocab},
                                {"n_ctx_train", r.shape.n_ctx_train},
                                {"n_embd", r.shape.n_embd},
                                {"n_layer", r.shape.n_layer},
                                {"n_head", r.shape.n_head},
                                {"n_head_kv", r.shape.n_head_kv},
                                {"head_dim", r.shape.head_dim},
                                {"n_ff", r.shape.n_ff},
                                {"tied_embeddings", r.shape.tied_embeddings}}}}},
                            {"decode",
                             {{"sampled", !r.sampling.greedy()},
                              {"temperature", r.sampling.temperature},
                              {"top_k", r.sampling.top_k},
                              {"top_p", r.sampling.top_p},
                              {"min_p", r.sampling.min_p},
                              {"host_threads", r.host_threads}}},
                            {"results", results}};
  std::printf("%s\n", j.dump(2).c_str());
}


int RunBenchEngine(const BenchEngineOptions& o) {
  EngineBenchOptions options;
  options.model_path = o.model_path;
  options.prompt_tokens = o.prompt_tokens;
  options.gen_tokens = o.gen_tokens;
  options.batch_sizes = o.batch_sizes;
  options.threads = o.threads;
  options.repeat = o.repeat;
  options.quick_limits = o.quick_limits;
  options.sampling = o.sampling;
  const ComputeDevice device = DeviceFromFlag(o.device);
  options.cuda_gpu = device.is_cuda() ? device.gpu : -1;
  auto report = RunEngineBench(options, [](const std::string& line) {
    std::fprintf(stderr, "bench engine: %s\n", line.c_str());
  });
  if (!report.ok()) return ReportError(report.status());
  if (o.json) {
    PrintJson(*report);
  } else {
    PrintTable(*report);
  }
  return 0;
}

}  // namespace

Command AddBenchEngineCommand(CLI::App& parent) {
  auto o = std::make_shared<BenchEngineOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "engine",
      "Measure this machine's limits (read bandwidth, int8 and fp32 peaks), then a model's "
      "prompt, generation and batched generation tok/s, each as a share of its limit");
  cmd->add_option("-m,--model", o->model_path, "GGUF model")->required();
  cmd->add_option("--prompt-tokens", o->prompt_tokens,
                  "Prompt length of the pp test (default 128; at most the model's context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  cmd->add_option("--gen-tokens", o->gen_tokens,
                  "Decode steps of the tg tests (default 64)")
      ->check(CLI::Range(int64_t{1}, kMaxGenTokens));
  cmd->add_option("--batch", o->batch_sizes,
                  "Comma-separated sequence counts of the tg tests (default 1,4,16; "
                  "1 is the single-sequence test)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, kMaxBatch));
  cmd->add_option("--threads,-t", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--repeat", o->repeat,
                  "Timed runs per test, after one warm-up run; the median is reported "
                  "(default 3)")
      ->check(CLI::Range(1, kMaxRepeat));
  cmd->add_option("--temperature", o->sampling.temperature,
                  "Decode steps' temperature (default 0: greedy, each row's argmax on the backend); above 0 "
                  "each row's logits come back and are drawn from on the host, as a sampled request's")
      ->check(CLI::Range(0.0f, 100.0f));
  cmd->add_option("--top-k", o->sampling.top_k, "Sampled decode: keep the k best logits (default 0: off)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--top-p", o->sampling.top_p, "Sampled decode: nucleus mass (default 1: off)")
      ->check(CLI::Range(0.0f, 1.0f));
  cmd->add_option("--min-p", o->sampling.min_p, "Sampled decode: keep p >= min_p x the best p (default 0: off)")
      ->check(CLI::Range(0.0f, 1.0f));
  AddDeviceOption(*cmd, o->device);
  cmd->add_flag("--json", o->json, "Print one JSON object instead of a table");
  cmd->add_flag("--quick-limits", o->quick_limits,
                "Measure the machine's limits in milliseconds over a small buffer "
                "(for tests: the limits and percentages are then rough)");
  return {cmd, [o] { return RunBenchEngine(*o); }};
}

}  // namespace swiftlet::cli
