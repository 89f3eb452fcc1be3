// swiftlet: one binary, one subcommand per job. This file only parses flags
// (CLI11 stays out of every other translation unit) and dispatches.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli/commands.h"

namespace swiftlet::cli {

int ReportError(std::string_view message) {
  std::fprintf(stderr, "swiftlet: error: %.*s\n", static_cast<int>(message.size()), message.data());
  return 1;
}

int ReportError(const absl::Status& status) {
  return ReportError(std::string_view(status.message().data(), status.message().size()));
}

namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;

template <typename T>
void AddOptional(CLI::App* app, const std::string& flag, std::optional<T>& target,
                 const std::string& help, int64_t max) {
  app->add_option_function<int64_t>(flag, [&target](int64_t v) { target = static_cast<T>(v); }, help)
      ->check(CLI::Range(int64_t{1}, max));
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"swiftlet: real-time inference server for Transformer language models"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Show help for every subcommand");

  InspectOptions inspect;
  CLI::App* inspect_cmd = app.add_subcommand("inspect", "Show what a GGUF file holds");
  inspect_cmd->add_option("model", inspect.model_path, "GGUF file");
  inspect_cmd->add_flag("--json", inspect.json, "Print JSON instead of a table");
  inspect_cmd->add_flag("--system", inspect.system,
                        "Print the CPU features found and the kernels chosen");

  QuantizeOptions quantize;
  CLI::App* quantize_cmd = app.add_subcommand(
      "quantize", "Convert a model's weights: TYPE is F16, Q8_0, Q4_0, Q4_K_M, Q5_K_M (or F32, BF16, Q5_0, Q4_K, Q5_K, Q6_K)");
  quantize_cmd->add_option("in", quantize.in_path, "Input GGUF")->required();
  quantize_cmd->add_option("out", quantize.out_path, "Output GGUF")->required();
  quantize_cmd->add_option("type", quantize.type, "Target type")->required();
  quantize_cmd->add_option("--threads", quantize.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));

  RunOptions run;
  CLI::App* run_cmd = app.add_subcommand("run", "Generate a continuation of a prompt");
  run_cmd->add_option("-m,--model", run.model_path, "GGUF model")->required();
  run_cmd->add_option("-p,--prompt", run.prompt, "Prompt text")->required();
  run_cmd->add_option("-n,--n-predict", run.n_predict, "Tokens to generate (default 128)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  run_cmd->add_option("--temp", run.temperature, "Temperature, 0 for greedy (default 0.8)")
      ->check(CLI::Range(0.0, 100.0));
  run_cmd->add_option("--top-k", run.top_k, "Top-k, 0 for off (default 40)")
      ->check(CLI::Range(0, 1 << 24));
  run_cmd->add_option("--top-p", run.top_p, "Top-p (default 0.95)")->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--min-p", run.min_p, "Min-p (default 0.05)")->check(CLI::Range(0.0, 1.0));
  run_cmd->add_option("--repeat-penalty", run.repeat_penalty, "Repetition penalty (default 1)")
      ->check(CLI::Range(0.0, 10.0));
  run_cmd->add_option("--seed", run.seed, "Random seed (default 0)");
  run_cmd->add_option("--threads,-t", run.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  run_cmd->add_option("--kv-type", run.kv_type, "KV cache type: f16 (default), f32 or q8_0");
  run_cmd->add_flag("--chat", run.chat, "Send the prompt as a user turn of the model's chat template");
  run_cmd->add_option("--chat-template", run.chat_template,
                      "Template family when the model has none or an unrecognised one: chatml, "
                      "llama2, llama3, mistral-v1, mistral-v3, mistral-v7, gemma, phi3, deepseek");
  run_cmd->add_option("--ctx", run.context, "Context length (default: the model's)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));

  TokenizeOptions tokenize;
  CLI::App* tokenize_cmd = app.add_subcommand("tokenize", "Print the token ids of a text");
  tokenize_cmd->add_option("-m,--model", tokenize.model_path, "GGUF model or vocabulary")->required();
  tokenize_cmd->add_option("--text", tokenize.text, "Text to tokenize")->required();
  tokenize_cmd->add_flag("--bos", tokenize.bos, "Prepend the BOS token");

  CLI::App* tools_cmd = app.add_subcommand("tools", "Developer tools");
  tools_cmd->require_subcommand(1);
  MakeModelOptions make;
  CLI::App* make_cmd = tools_cmd->add_subcommand(
      "make-model", "Write a Llama-family GGUF with seeded random weights");
  make_cmd->add_option("--out,-o", make.out_path, "Output GGUF")->required();
  make_cmd->add_option("--preset", make.preset,
                       "Shape: tiny, tinyllama-1.1b, smollm2-135m, qwen2.5-0.5b, qwen3-0.6b");
  make_cmd->add_option_function<std::string>(
      "--arch", [&make](const std::string& v) { make.arch = v; }, "llama, qwen2 or qwen3");
  AddOptional(make_cmd, "--hidden", make.hidden, "Embedding width", kMaxDim);
  AddOptional(make_cmd, "--layers", make.layers, "Transformer blocks", 1024);
  AddOptional(make_cmd, "--heads", make.heads, "Attention heads", kMaxDim);
  AddOptional(make_cmd, "--kv-heads", make.kv_heads, "Key/value heads", kMaxDim);
  AddOptional(make_cmd, "--head-dim", make.head_dim, "Head dimension (default hidden/heads)", 1024);
  AddOptional(make_cmd, "--ffn", make.ffn, "Feed-forward width", kMaxDim);
  AddOptional(make_cmd, "--context", make.context, "Training context length", int64_t{1} << 24);
  make_cmd->add_option_function<double>(
      "--rope-base", [&make](double v) { make.rope_base = v; }, "RoPE frequency base")
      ->check(CLI::Range(1.0, 1e12));
  make_cmd->add_flag("--tied", make.tied, "No output.weight: the head reuses token_embd");
  make_cmd->add_option("--type", make.type, "Weight format, as for quantize (default F32)");
  make_cmd->add_option("--vocab", make.vocab_path,
                       "GGUF whose tokenizer to copy (default: a small synthetic one)");
  make_cmd->add_option("--seed", make.seed, "Random seed");
  make_cmd->add_option("--threads", make.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));

  // `bench` is the HTTP load generator (its flags are bench's own);
  // `bench engine` runs the model in-process instead.
  CLI::App* bench_cmd = app.add_subcommand(
      "bench", "Load-test an OpenAI-compatible server (latency percentiles, goodput); "
               "`bench engine` benchmarks a model in-process");
  bench_cmd->require_subcommand(0, 1);
  BenchLoadOptions bench_load;
  bench_cmd->add_option("--url", bench_load.url, "Server base URL, http://HOST:PORT");
  bench_cmd->add_option("--model", bench_load.model, "Model name to send (default: the server's first)");
  bench_cmd->add_option("--rate", bench_load.rates,
                        "Open loop: arrival rates, requests/s, comma-separated (a sweep)")
      ->delimiter(',');
  bench_cmd->add_option("--concurrency", bench_load.concurrencies,
                        "Closed loop: requests in flight, comma-separated (a sweep)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  bench_cmd->add_option("--requests", bench_load.requests, "Requests per load point")
      ->check(CLI::Range(int64_t{1}, int64_t{10000000}));
  bench_cmd->add_option("--duration", bench_load.duration, "Sending time per load point (30s, 2m)");
  bench_cmd->add_option("--warmup", bench_load.warmup,
                        "Requests per point left out of the figures (default 10%, at most 20)")
      ->check(CLI::Range(int64_t{0}, int64_t{10000000}));
  bench_cmd->add_option("--burstiness", bench_load.burstiness,
                        "Open loop: squared coefficient of variation of the gaps (1: Poisson; "
                        "> 1 burstier, gamma)")
      ->check(CLI::Range(1e-3, 1e3));
  bench_cmd->add_option("--prompt-tokens", bench_load.prompt_tokens,
                        "Prompt length in words, N or MIN-MAX (default 40)");
  bench_cmd->add_option("--output-tokens", bench_load.output_tokens,
                        "Output tokens forced per request, N or MIN-MAX (default 32)");
  bench_cmd->add_option("--workload", bench_load.workload,
                        "synthetic (default), file:PATH (JSONL of request bodies) or live-comments");
  bench_cmd->add_option("--streams", bench_load.streams,
                        "live-comments: independent live streams sending comments (default 1)")
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  bench_cmd->add_option("--languages", bench_load.languages,
                        "live-comments: target languages per comment (default 3)")
      ->check(CLI::Range(1, 10));
  bench_cmd->add_option("--slo", bench_load.slo, "Targets, e.g. ttft=500ms,tpot=100ms[,e2e=2s]");
  bench_cmd->add_option("--timeout", bench_load.timeout,
                        "Per request, and the wait for answers after a point (default 120s)");
  bench_cmd->add_option("--seed", bench_load.seed, "Random seed (arrivals and prompts)");
  bench_cmd->add_option("--json", bench_load.json_path, "Write every figure as JSON to FILE");
  bench_cmd->add_option("--html", bench_load.html_path, "Write a self-contained HTML report to FILE");
  BenchEngineOptions bench_engine;
  CLI::App* bench_engine_cmd = bench_cmd->add_subcommand(
      "engine",
      "Measure this machine's limits (read bandwidth, int8 and fp32 peaks), then a model's "
      "prompt, generation and batched generation tok/s, each as a share of its limit");
  bench_engine_cmd->add_option("-m,--model", bench_engine.model_path, "GGUF model")->required();
  bench_engine_cmd->add_option("--prompt-tokens", bench_engine.prompt_tokens,
                               "Prompt length of the pp test (default 128; at most the model's context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  bench_engine_cmd->add_option("--gen-tokens", bench_engine.gen_tokens,
                               "Decode steps of the tg tests (default 64)")
      ->check(CLI::Range(int64_t{1}, kBenchMaxGenTokens));
  bench_engine_cmd->add_option("--batch", bench_engine.batch_sizes,
                               "Comma-separated sequence counts of the tg tests (default 1,4,16; "
                               "1 is the single-sequence test)")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, kBenchMaxBatch));
  bench_engine_cmd->add_option("--threads,-t", bench_engine.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  bench_engine_cmd->add_option("--repeat", bench_engine.repeat,
                               "Timed runs per test, after one warm-up run; the median is reported "
                               "(default 3)")
      ->check(CLI::Range(1, kBenchMaxRepeat));
  bench_engine_cmd->add_flag("--json", bench_engine.json, "Print one JSON object instead of a table");
  bench_engine_cmd->add_flag("--quick-limits", bench_engine.quick_limits,
                             "Measure the machine's limits in milliseconds over a small buffer "
                             "(for tests: the limits and percentages are then rough)");

  LogitsOptions logits;
  CLI::App* logits_cmd = tools_cmd->add_subcommand(
      "logits", "Write the logits at every position of a token sequence (float32)");
  logits_cmd->add_option("-m,--model", logits.model_path, "GGUF model")->required();
  logits_cmd->add_option("--tokens", logits.tokens, "Token ids, space-separated")->required();
  logits_cmd->add_option("--kv-type", logits.kv_type, "KV cache type: f16, f32 or q8_0 (default f32)");
  logits_cmd->add_option("--chunk", logits.chunk, "Prompt chunk size (default: all at once)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  logits_cmd->add_option("--threads", logits.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  logits_cmd->add_option("--out,-o", logits.out_path, "Output file")->required();

  DriveOptions drive;
  CLI::App* drive_cmd = tools_cmd->add_subcommand(
      "drive", "Open-loop Poisson load straight into the engine (no HTTP), swept over rates");
  drive_cmd->add_option("-m,--model", drive.model_path, "GGUF model")->required();
  drive_cmd->add_option("--rate", drive.rates, "Arrival rates, requests/s, comma-separated")
      ->delimiter(',')
      ->required();
  drive_cmd->add_option("--requests", drive.requests, "Requests per rate (default: 15 s of arrivals, at least 40)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  drive_cmd->add_option("--prompt-words", drive.prompt_words, "Words per prompt (default 40)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  drive_cmd->add_option("--shared-prefix-words", drive.shared_prefix_words,
                        "Words of an instruction shared by every prompt (default 0)")
      ->check(CLI::Range(int64_t{0}, int64_t{4096}));
  drive_cmd->add_option("--output-tokens", drive.output_tokens, "Tokens per request, EOS ignored (default 32)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 16));
  drive_cmd->add_option("--slo", drive.slo, "Targets, e.g. ttft=500ms,tpot=100ms[,e2e=2s]");
  drive_cmd->add_option("--burstiness", drive.burstiness, "Gamma arrivals: 1 is Poisson (default)")
      ->check(CLI::Range(0.01, 100.0));
  drive_cmd->add_option("--threads,-t", drive.threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  drive_cmd->add_option("--kv-memory", drive.kv_memory_bytes, "KV cache bytes (default: a share of free RAM)")
      ->check(CLI::Range(uint64_t{1} << 20, uint64_t{1} << 40));
  drive_cmd->add_option("--step-tokens", drive.step_tokens, "Tokens per forward pass at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  drive_cmd->add_option("--chunk-tokens", drive.chunk_tokens, "Prefill tokens per sequence per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  drive_cmd->add_option("--seed", drive.seed, "Seed of prompts and arrivals");
  drive_cmd->add_option("--json", drive.json_path, "Also write the figures to this JSON file");

  ServeOptions serve;
  CLI::App* serve_cmd = app.add_subcommand(
      "serve", "Serve a model over the OpenAI-compatible HTTP API (completions, chat, embeddings)");
  serve_cmd->add_option("-m,--model", serve.model_path, "GGUF model")->required();
  serve_cmd->add_option("--host", serve.host, "Address to listen on (default 127.0.0.1)");
  serve_cmd->add_option("--port", serve.port, "Port (default 8080; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  serve_cmd->add_option("--threads,-t", serve.threads, "Engine threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  serve_cmd->add_option("--kv-memory", serve.kv_memory,
                        "KV cache size, e.g. 2GiB (default: 40% of available memory)");
  serve_cmd->add_option("--kv-type", serve.kv_type, "KV cache type: f16 (default), f32 or q8_0");
  serve_cmd->add_option("--ctx", serve.context, "Context per sequence (default: the model's, capped)")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 20));
  serve_cmd->add_option("--max-queue", serve.max_queue, "Requests waiting at most (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  serve_cmd->add_option("--max-queued-tokens", serve.max_queued_tokens,
                        "Prompt tokens waiting at most (default 262144)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  serve_cmd->add_option("--max-running", serve.max_running, "Sequences in a batch at most (default 64)")
      ->check(CLI::Range(1, 4096));
  serve_cmd->add_option("--max-tokens", serve.max_tokens, "Cap on a request's max_tokens (default: the context)")
      ->check(CLI::Range(1, 1 << 24));
  serve_cmd->add_option("--step-tokens", serve.step_tokens, "Tokens per forward pass at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  serve_cmd->add_option("--chunk-tokens", serve.chunk_tokens, "Prefill tokens per sequence per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  serve_cmd->add_option("--slo-interactive", serve.slo_interactive,
                        "Default targets of interactive requests (default ttft=500ms,tpot=100ms)");
  serve_cmd->add_option("--slo-batch", serve.slo_batch, "Default targets of batch requests (default ttft=30s)");
  serve_cmd->add_option("--chat-template", serve.chat_template,
                        "Chat template family when the model has none: " "chatml, llama2, llama3, "
                        "mistral-v1, mistral-v3, mistral-v7, gemma, phi3, deepseek");
  serve_cmd->add_option("--model-name", serve.model_name, "Model id clients send (default: the file name)");
  serve_cmd->add_option("--io-threads", serve.io_threads, "HTTP I/O threads (default 2)")
      ->check(CLI::Range(1, 64));
  serve_cmd->add_option("--max-connections", serve.max_connections, "Open connections at most (default 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  serve_cmd->add_option("--max-body", serve.max_body, "Request body size at most (default 8MiB)");
  serve_cmd->add_option("--grace", serve.grace, "On SIGINT/SIGTERM, time for requests in flight (default 10s)");
  serve_cmd->add_option("--header-timeout", serve.header_timeout,
                        "Request line and headers must arrive within this (default 10s)");
  serve_cmd->add_option("--body-timeout", serve.body_timeout, "A request body must arrive within this (default 30s)");
  serve_cmd->add_option("--idle-timeout", serve.idle_timeout,
                        "A kept-alive connection waits this long for its next request (default 60s)");
  serve_cmd->add_option("--embedding-threads", serve.embedding_threads, "Threads of the embedding worker (default 1)")
      ->check(CLI::Range(1, 64));
  serve_cmd->add_flag("--log-content", serve.log_content, "Write prompts and outputs to the request log");
  serve_cmd->add_flag("--no-prefix-cache", serve.no_prefix_cache, "Do not reuse cached prompt blocks");

  // CLI11 would only say "a subcommand is required"; name the mistake.
  std::string commands;
  bool known = false;
  const std::string first = argc > 1 ? argv[1] : "";
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    commands += (commands.empty() ? "" : ", ") + sub->get_name();
    known = known || sub->get_name() == first;
  }
  if (!first.empty() && first[0] != '-' && !known) {
    ReportError("unknown command '" + first + "' (commands: " + commands + ")");
    return 2;
  }
  if (first == "bench" && argc > 2 && argv[2][0] != '-' && std::string(argv[2]) != "engine") {
    ReportError(std::string("unknown bench command '") + argv[2] + "' (bench commands: engine)");
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    ReportError(e.what());
    return 2;
  }

  if (*serve_cmd) return RunServe(serve);
  if (*run_cmd) return RunRun(run);
  if (*tokenize_cmd) return RunTokenize(tokenize);
  if (*inspect_cmd) return RunInspect(inspect);
  if (*quantize_cmd) return RunQuantize(quantize);
  if (*make_cmd) return RunMakeModel(make);
  if (*logits_cmd) return RunLogits(logits);
  if (*bench_engine_cmd) return RunBenchEngine(bench_engine);
  if (*drive_cmd) return RunDrive(drive);
  if (*bench_cmd) return RunBenchLoad(bench_load);
  return ReportError("no subcommand");
}

}  // namespace swiftlet::cli

int main(int argc, char** argv) { return swiftlet::cli::Main(argc, argv); }
