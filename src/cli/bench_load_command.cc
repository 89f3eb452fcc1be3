// swiftlet bench: the HTTP load generator's flags (loadgen/sweep.h runs it).
#include <memory>
#include <string>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/str_cat.h"
#include "loadgen/sweep.h"
#include "perf/machine_limits.h"

namespace swiftlet::cli {
namespace {

int RunBenchLoad(loadgen::SweepOptions o) {
  o.client_machine = StrCat(CpuModelName(), ", ", std::thread::hardware_concurrency(), " threads");
  if (absl::Status s = loadgen::RunSweep(o); !s.ok()) return ReportError(s);
  return 0;
}

}  // namespace

Command AddBenchCommand(CLI::App& parent) {
  auto o = std::make_shared<loadgen::SweepOptions>();
  // `bench` is the HTTP load generator (its flags are bench's own);
  // `bench engine` runs the model in-process instead.
  CLI::App* cmd = parent.add_subcommand(
      "bench", "Load-test an OpenAI-compatible server (latency percentiles, goodput); "
               "`bench engine` benchmarks a model in-process");
  cmd->require_subcommand(0, 1);
  cmd->add_option("--url", o->url, "Server base URL, http://HOST:PORT or https://HOST:PORT");
  cmd->add_option("--ca", o->ca_file,
                  "https: PEM file of the certificate authority to trust (default: the system's)");
  cmd->add_option("--model", o->model, "Model name to send (default: the server's first)");
  cmd->add_option("--rate", o->rates,
                  "Open loop: arrival rates, requests/s, comma-separated (a sweep)")
      ->delimiter(',');
  cmd->add_option("--concurrency", o->concurrencies,
                  "Closed loop: requests in flight, comma-separated (a sweep)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->add_option("--requests", o->requests, "Requests per load point")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  cmd->add_option("--duration", o->duration, "Sending time per load point (30s, 2m)");
  cmd->add_option("--warmup", o->warmup,
                  "Requests per point left out of the figures (default 10%, at most 20)")
      ->check(CLI::Range(int64_t{0}, int64_t{10000000}));
  cmd->add_option("--burstiness", o->burstiness,
                  "Open loop: squared coefficient of variation of the gaps (1: Poisson; "
                  "> 1 burstier, gamma)")
      ->check(CLI::Range(1e-3, 1e3));
  cmd->add_option("--prompt-tokens", o->prompt_tokens,
                  "Prompt length in words, N or MIN-MAX (default 40)");
  cmd->add_option("--output-tokens", o->output_tokens,
                  "Output tokens forced per request, N or MIN-MAX (default 32)");
  cmd->add_option("--workload", o->workload,
                  "synthetic (default), file:PATH (JSONL of request bodies) or live-comments");
  cmd->add_option("--shared-prefix-words", o->shared_prefix_words,
                  "synthetic: words of an instruction shared by every prompt, before its own "
                  "(default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{100000}));
  cmd->add_option("--streams", o->streams,
                  "live-comments: independent live streams sending comments (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  cmd->add_option("--languages", o->languages,
                  "live-comments: target languages per comment (default 3)")
      ->check(CLI::Range(1, 16));
  cmd->add_option("--transport", o->transport,
                  "live-comments: websocket, translate or chat; measures per comment (all K languages) "
                  "instead of per request");
  cmd->add_option("--comment-rate", o->comment_rates,
                  "live-comments with --transport: comments per second per stream; a list is a sweep")
      ->delimiter(',');
  cmd->add_option("--budget", o->budget,
                  "live-comments with --transport: a comment counts when all its languages came within "
                  "this (default 800ms)");
  cmd->add_option("--slo", o->slo, "Targets, e.g. ttft=500ms,tpot=100ms[,e2e=2s]");
  cmd->add_option("--api-key", o->api_key, "Sent as Authorization: Bearer KEY (default: $SWIFTLET_API_KEY)")
      ->envname("SWIFTLET_API_KEY");
  cmd->add_option("--timeout", o->timeout,
                  "Per request, and the wait for answers after a point (default 120s)");
  cmd->add_option("--seed", o->seed, "Random seed (arrivals and prompts)");
  cmd->add_option("--json", o->json_path, "Write every figure as JSON to FILE");
  cmd->add_option("--html", o->html_path, "Write a self-contained HTML report to FILE");
  return {cmd, [o] { return RunBenchLoad(*o); }};
}

}  // namespace swiftlet::cli
