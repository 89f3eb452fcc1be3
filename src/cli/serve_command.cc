// swiftlet serve: loads a model, starts the engine and the OpenAI-compatible
// HTTP server, and runs until SIGINT or SIGTERM, then shuts down in order:
// new requests get 503 while those in flight finish (up to --grace), the
// rest are cancelled, the engine stops.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/hosted_model_loader.h"
#include "core/byte_size.h"
#include "core/duration.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "engine/pooling.h"
#include "server/api_keys.h"
#include "engine/engine.h"
#include "engine/step_gate.h"
#include "model/model.h"
#include "server/api_server.h"
#include "server/model_registry.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

// swiftlet serve. Sizes and durations are strings parsed by the command
// (core/byte_size.h, core/duration.h), so errors name the flag.
struct ServeOptions {
  std::vector<std::string> model_paths;  // -m, in order: the first is the default model.
  std::string models_dir;                // --models DIR: every *.gguf in it, by name.
  std::vector<std::string> model_names;  // --model-name, one per -m in order.
  std::string memory_budget;             // Empty: none.
  std::vector<std::string> keep_alive = {"5m"};  // DUR for all, or NAME=DUR.
  std::vector<std::string> pins;
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: an ephemeral port (printed)
  int threads = 0;                     // Engine threads; 0: physical cores
  std::string kv_memory;               // Empty: a share of free RAM
  std::string kv_type = "f16";
  std::string device = "cpu";
  int64_t context = 0;                 // Per sequence; 0: the model's (capped)
  int64_t max_queue = 1024;
  int64_t max_queued_tokens = 1 << 18;
  int32_t max_running = 64;
  int32_t max_tokens = 0;              // Cap on max_tokens; 0: the context
  int64_t step_tokens = 0;             // 0: the engine's default
  int64_t chunk_tokens = 0;
  std::string slo_interactive = "ttft=500ms,tpot=100ms";
  std::string slo_batch = "ttft=30s";
  std::string slo_embedding = "ttft=2s";
  std::string chat_template;
  int io_threads = 2;
  int64_t max_connections = 10000;
  std::string max_body = "8MiB";
  std::string grace = "10s";
  std::string header_timeout = "10s";  // Slow-loris bounds (HttpServerOptions).
  std::string body_timeout = "30s";
  std::string idle_timeout = "60s";
  bool log_content = false;
  std::string translate_cache = "memory";
  std::string translate_cache_size = "64MiB";
  std::string translate_cache_ttl = "1h";
  std::vector<std::string> stream_origins;
  std::string api_keys;
  std::string admin_endpoints = "key";
  std::string prefix_cache_scope = "key";
  bool scrub_kv = false;
  std::string audit_log;
  std::string audit_log_max_size = "100MiB";
  int audit_log_keep = 5;
  bool no_prefix_cache = false;
  bool no_prefix_warmup = false;
  std::string tls_cert;                // HTTPS when set (with tls_key).
  std::string tls_key;
};

absl::StatusOr<LatencyTargets> ParseTargets(const std::string& flag, const std::string& text) {
  auto list = ParseDurationList(text, {"ttft", "tpot"});
  if (!list.ok()) return absl::InvalidArgumentError(StrCat(flag, ": ", list.status().message()));
  LatencyTargets t;
  for (const auto& [key, ns] : *list) (key == "ttft" ? t.ttft_ns : t.tpot_ns) = ns;
  return t;
}

// A connection timeout: 100ms..1h (shorter would cut off honest clients on
// a slow link; longer is no bound at all).
absl::StatusOr<std::chrono::milliseconds> ParseTimeout(const std::string& flag, const std::string& text) {
  auto ns = ParseDuration(text);
  if (!ns.ok()) return absl::InvalidArgumentError(StrCat(flag, ": ", ns.status().message()));
  if (*ns < 100'000'000 || *ns > int64_t{3600} * 1'000'000'000) {
    return absl::InvalidArgumentError(StrCat(flag, ": must be 100ms..1h"));
  }
  return std::chrono::milliseconds(*ns / 1'000'000);
}

std::string DefaultModelName(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  if (name.size() > 5 && name.ends_with(".gguf")) name.resize(name.size() - 5);
  return name.empty() ? "model" : name;
}


// The models to serve, named and with their keep-alive and pins, from -m,
// --models, --model-name, --keep-alive and --pin.
absl::StatusOr<std::vector<server::ModelSpec>> ModelSpecs(const ServeOptions& o) {
  std::vector<server::ModelSpec> specs;
  if (o.model_names.size() > o.model_paths.size()) {
    return absl::InvalidArgumentError(StrCat("--model-name: ", o.model_names.size(), " names for ", o.model_paths.size(),
                                             " -m models (one per -m, in order)"));
  }
  for (size_t i = 0; i < o.model_paths.size(); ++i) {
    server::ModelSpec spec;
    spec.path = o.model_paths[i];
    spec.name = i < o.model_names.size() ? o.model_names[i] : DefaultModelName(spec.path);
    specs.push_back(spec);
  }
  if (!o.models_dir.empty()) {
    std::error_code ec;
    std::vector<std::string> files;
    for (const auto& entry : std::filesystem::directory_iterator(o.models_dir, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".gguf") files.push_back(entry.path().string());
    }
    if (ec) return absl::InvalidArgumentError(StrCat("--models: ", o.models_dir, ": ", ec.message()));
    if (files.empty()) return absl::InvalidArgumentError(StrCat("--models: no .gguf file in ", o.models_dir));
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) specs.push_back(server::ModelSpec{DefaultModelName(f), f});
  }
  if (specs.empty()) return absl::InvalidArgumentError("no model: give -m FILE (repeatable) or --models DIR");
  // Every file readable now, so a typo in a model that loads on demand
  // fails at start, not at its first request.
  for (const server::ModelSpec& spec : specs) {
    if (std::FILE* f = std::fopen(spec.path.c_str(), "rb"); f != nullptr) {
      std::fclose(f);
    } else {
      return absl::InvalidArgumentError(StrCat(spec.path, ": cannot open: ", std::strerror(errno)));
    }
  }
  auto find = [&](const std::string& name) -> server::ModelSpec* {
    for (server::ModelSpec& spec : specs) {
      if (spec.name == name) return &spec;
    }
    return nullptr;
  };
  for (const std::string& text : o.keep_alive) {
    const size_t eq = text.find('=');
    const std::string duration = eq == std::string::npos ? text : text.substr(eq + 1);
    auto ns = ParseDuration(duration);
    if (!ns.ok()) return absl::InvalidArgumentError(StrCat("--keep-alive: ", ns.status().message()));
    if (*ns < 0 || *ns > int64_t{30} * 24 * 3600 * kNsPerSecond) {
      return absl::InvalidArgumentError("--keep-alive: 0 (forever) .. 720h");
    }
    if (eq == std::string::npos) {
      for (server::ModelSpec& spec : specs) spec.keep_alive_ns = *ns;
    } else if (server::ModelSpec* spec = find(text.substr(0, eq)); spec != nullptr) {
      spec->keep_alive_ns = *ns;
    } else {
      return absl::InvalidArgumentError(StrCat("--keep-alive: no model named '", text.substr(0, eq), "'"));
    }
  }
  for (const std::string& name : o.pins) {
    server::ModelSpec* spec = find(name);
    if (spec == nullptr) return absl::InvalidArgumentError(StrCat("--pin: no model named '", name, "'"));
    spec->pinned = true;
  }
  return specs;
}

int RunServe(const ServeOptions& o) {
  // Validate every flag before the (slow) model load.
  if (o.port < 0 || o.port > 65535) return ReportError("--port: must be 0..65535");
  auto kv_type = ParseKvType(o.kv_type);
  if (!kv_type.ok()) return ReportError(kv_type.status());
  uint64_t kv_bytes = 0;
  if (!o.kv_memory.empty()) {
    auto b = ParseByteSize(o.kv_memory);
    if (!b.ok()) return ReportError(StrCat("--kv-memory: ", b.status().message()));
    if (*b < (uint64_t{1} << 20)) return ReportError("--kv-memory: at least 1MiB");
    kv_bytes = *b;
  }
  auto max_body = ParseByteSize(o.max_body);
  if (!max_body.ok()) return ReportError(StrCat("--max-body: ", max_body.status().message()));
  if (*max_body < 1024 || *max_body > (uint64_t{1} << 30)) return ReportError("--max-body: 1KiB..1GiB");
  auto grace = ParseDuration(o.grace);
  if (!grace.ok()) return ReportError(StrCat("--grace: ", grace.status().message()));
  auto header_timeout = ParseTimeout("--header-timeout", o.header_timeout);
  if (!header_timeout.ok()) return ReportError(header_timeout.status());
  auto body_timeout = ParseTimeout("--body-timeout", o.body_timeout);
  if (!body_timeout.ok()) return ReportError(body_timeout.status());
  auto idle_timeout = ParseTimeout("--idle-timeout", o.idle_timeout);
  if (!idle_timeout.ok()) return ReportError(idle_timeout.status());
  auto slo_interactive = ParseTargets("--slo-interactive", o.slo_interactive);
  if (!slo_interactive.ok()) return ReportError(slo_interactive.status());
  auto slo_batch = ParseTargets("--slo-batch", o.slo_batch);
  if (!slo_batch.ok()) return ReportError(slo_batch.status());
  auto slo_embedding = ParseTargets("--slo-embedding", o.slo_embedding);
  if (!slo_embedding.ok()) return ReportError(slo_embedding.status());
  if (absl::Status s = server::CheckTranslateCacheSpec(o.translate_cache); !s.ok()) return ReportError(s);
  auto cache_bytes = ParseByteSize(o.translate_cache_size);
  if (!cache_bytes.ok()) return ReportError(StrCat("--translate-cache-size: ", cache_bytes.status().message()));
  if (*cache_bytes < 4096 || *cache_bytes > (uint64_t{64} << 30)) {
    return ReportError("--translate-cache-size: 4KiB..64GiB");
  }
  if (o.admin_endpoints != "key" && o.admin_endpoints != "open") {
    return ReportError("--admin-endpoints: key or open");
  }
  if (o.prefix_cache_scope != "key" && o.prefix_cache_scope != "global") {
    return ReportError("--prefix-cache-scope: key or global");
  }
  if (!o.api_keys.empty()) {
    // Read now, so a bad file fails before the model loads.
    auto keys = server::ApiKeyTable::Load(o.api_keys);
    if (!keys.ok()) return ReportError(StrCat("--api-keys: ", keys.status().message()));
  }
  auto audit_max = ParseByteSize(o.audit_log_max_size);
  if (!audit_max.ok() || *audit_max < 4096) return ReportError("--audit-log-max-size: a size of 4KiB or more");
  auto cache_ttl = ParseDuration(o.translate_cache_ttl);
  if (!cache_ttl.ok()) return ReportError(StrCat("--translate-cache-ttl: ", cache_ttl.status().message()));
  if (*cache_ttl < kNsPerSecond || *cache_ttl > 30 * 24 * 3600 * kNsPerSecond) {
    return ReportError("--translate-cache-ttl: 1s..720h");
  }
  if (absl::Status s = server::CheckTlsFiles(o.tls_cert, o.tls_key); !s.ok()) return ReportError(s);
  auto specs = ModelSpecs(o);
  if (!specs.ok()) return ReportError(specs.status());
  uint64_t memory_budget = 0;
  if (!o.memory_budget.empty()) {
    auto b = ParseByteSize(o.memory_budget);
    if (!b.ok()) return ReportError(StrCat("--memory-budget: ", b.status().message()));
    if (*b < (uint64_t{1} << 20)) return ReportError("--memory-budget: at least 1MiB");
    memory_budget = *b;
  }

  // Signals go to the thread that waits for them: block them before any
  // other thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  EngineConfig cfg;
  cfg.threads = o.threads > 0 ? o.threads : PhysicalCores();
  cfg.kv_memory_bytes = kv_bytes;
  cfg.kv_type = *kv_type;
  cfg.context = o.context;
  cfg.max_queue = o.max_queue;
  cfg.max_queued_tokens = o.max_queued_tokens;
  cfg.max_running = o.max_running;
  if (o.step_tokens > 0) cfg.scheduler.step_tokens = o.step_tokens;
  if (o.chunk_tokens > 0) cfg.scheduler.chunk_tokens = o.chunk_tokens;
  cfg.slo_interactive = *slo_interactive;
  cfg.slo_batch = *slo_batch;
  cfg.slo_embedding = *slo_embedding;
  cfg.prefix_cache = !o.no_prefix_cache;
  cfg.warm_refused_prefixes = !o.no_prefix_warmup;
  cfg.scrub_kv = o.scrub_kv;
  const ComputeDevice device = DeviceFromFlag(o.device);
  if (specs->size() > 1) {
    // Several models: one compute pool for all (engine/step_gate.h), and
    // each engine's KV cache a share of the default when none is given (on
    // the GPU, of what stays free once every model's weights are there).
    cfg.step_gate = std::make_shared<StepGate>(cfg.threads);
    if (cfg.kv_memory_bytes == 0) {
      uint64_t weights = 0;
      for (const server::ModelSpec& spec : *specs) {
        std::error_code error;
        const uintmax_t bytes = std::filesystem::file_size(spec.path, error);
        if (!error) weights += bytes;
      }
      cfg.kv_memory_bytes =
          std::max<uint64_t>(uint64_t{64} << 20, Engine::DefaultKvBytes(device, weights) / specs->size());
    }
  }
  HostedModelOptions hosted;
  hosted.engine = cfg;
  hosted.chat_template = o.chat_template;
  hosted.device = device;
  server::ModelRegistryOptions ro;
  ro.memory_budget_bytes = memory_budget;
  ro.kv_bytes_per_model = cfg.kv_memory_bytes > 0 ? cfg.kv_memory_bytes : Engine::DefaultKvBytes(device);
  auto registry = server::ModelRegistry::Create(
      *specs, [hosted](const server::ModelSpec& spec) { return LoadHostedModel(spec, hosted); }, ro);
  if (!registry.ok()) return ReportError(registry.status());
  if (hosted.device.is_cuda()) {
    std::fprintf(stderr, "swiftlet: %zu model%s, engine on GPU %d\n", specs->size(), specs->size() == 1 ? "" : "s",
                 hosted.device.gpu);
  } else {
    std::fprintf(stderr, "swiftlet: %zu model%s, engine on %d threads\n", specs->size(),
                 specs->size() == 1 ? "" : "s", cfg.threads);
  }
  if (absl::Status s = (*registry)->Start(); !s.ok()) return ReportError(s);
  const std::string model_name = (*registry)->default_name();
  server::ApiServerOptions ao;
  ao.host = o.host;
  ao.port = static_cast<uint16_t>(o.port);
  ao.io_threads = o.io_threads;
  ao.max_connections = static_cast<size_t>(o.max_connections);
  ao.max_body_bytes = *max_body;
  ao.header_timeout = *header_timeout;
  ao.body_timeout = *body_timeout;
  ao.idle_timeout = *idle_timeout;
  ao.max_tokens_cap = o.max_tokens;
  ao.log_content = o.log_content;
  ao.translate_cache = o.translate_cache;
  ao.translate_cache_bytes = *cache_bytes;
  ao.translate_cache_ttl = std::chrono::milliseconds(*cache_ttl / kNsPerMs);
  ao.stream_origins = o.stream_origins;
  ao.api_keys_path = o.api_keys;
  ao.audit_log_path = o.audit_log;
  ao.audit_log_max_bytes = *audit_max;
  ao.audit_log_keep = o.audit_log_keep;
  ao.admin_endpoints_open = o.admin_endpoints == "open";
  ao.cache_scope_per_key = o.prefix_cache_scope == "key";
  ao.tls_cert_file = o.tls_cert;
  ao.tls_key_file = o.tls_key;

  auto api = server::ApiServer::Start(ao, **registry);
  if (!api.ok()) {
    (*registry)->Stop();
    return ReportError(api.status());
  }
  server::ApiServer& server = **api;
  const std::string url = StrCat(server.tls() ? "https://" : "http://", o.host.find(':') != std::string::npos ? StrCat("[", o.host, "]") : o.host,
                                 ":", server.port());
  std::printf("swiftlet: serving %s on %s\n", model_name.c_str(), url.c_str());
  std::printf("try: curl %s/v1/completions -H 'Content-Type: application/json' "
              "-d '{\"prompt\": \"Hello\", \"max_tokens\": 16}'\n",
              url.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  while (true) {
    sigwait(&signals, &signal_number);
    if (signal_number != SIGHUP) break;
    // Reload what can be reloaded without dropping a connection: the API
    // keys and the TLS certificate and key.
    if (!o.api_keys.empty()) {
      const absl::Status s = server.ReloadApiKeys();
      std::fprintf(stderr, "swiftlet: SIGHUP: API keys %s%s\n", s.ok() ? "reloaded" : "kept: ",
                   s.ok() ? "" : std::string(s.message()).c_str());
    }
    if (server.tls()) {
      const absl::Status s = server.ReloadTls();
      std::fprintf(stderr, "swiftlet: SIGHUP: TLS certificate %s%s\n", s.ok() ? "reloaded" : "kept: ",
                   s.ok() ? "" : std::string(s.message()).c_str());
    }
  }
  std::fprintf(stderr, "swiftlet: %s: draining (grace %s)\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM",
               o.grace.c_str());
  server.BeginDrain();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(*grace);
  while (server.in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What is still running is cancelled: its connections close, which
  // cancels the engine requests.
  server.Stop(std::chrono::milliseconds(100));
  // The engines stop before the service goes: their last callbacks (the
  // cancelled requests' answers) still reach it.
  (*registry)->Stop();
  api->reset();
  std::fprintf(stderr, "swiftlet: stopped\n");
  return 0;
}

}  // namespace

Command AddServeCommand(CLI::App& parent) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "serve", "Serve a model over the OpenAI-compatible HTTP API (completions, chat, embeddings)");
  cmd->add_option("-m,--model", o->model_paths,
                  "GGUF model; repeat to serve several (the first is the default of requests that name none)");
  cmd->add_option("--models", o->models_dir, "Serve every .gguf file in DIR too, each named by its file name");
  cmd->add_option("--memory-budget", o->memory_budget,
                  "Memory the hot models may hold in all (weights, repacked copies, KV), e.g. 8GiB; "
                  "least recently used models are unloaded to fit (default: no budget)");
  cmd->add_option("--keep-alive", o->keep_alive,
                  "Unload a model unused this long, e.g. 5m (default); NAME=DUR for one model; 0: never")
      ->delimiter(',');
  cmd->add_option("--pin", o->pins, "Keep model NAME loaded (repeatable); the default model always is")->delimiter(',');
  cmd->add_option("--host", o->host, "Address to listen on (default 127.0.0.1)");
  cmd->add_option("--port", o->port, "Port (default 8080; 0: any free port)")
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--threads,-t", o->threads, "Engine threads (default: physical cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--kv-memory", o->kv_memory,
                  "KV cache size, e.g. 2GiB (default: 40% of available memory)");
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f16 (default), f32 or q8_0");
  AddDeviceOption(*cmd, o->device);
  cmd->add_option("--ctx", o->context, "Context per sequence (default: the model's, capped)")
      ->check(CLI::Range(int64_t{16}, int64_t{1} << 20));
  cmd->add_option("--max-queue", o->max_queue, "Requests waiting at most (default 1024)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-queued-tokens", o->max_queued_tokens,
                  "Prompt tokens waiting at most (default 262144)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  cmd->add_option("--max-running", o->max_running, "Sequences in a batch at most (default 64)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--max-tokens", o->max_tokens, "Cap on a request's max_tokens (default: the context)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("--step-tokens", o->step_tokens, "Tokens per forward pass at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  cmd->add_option("--chunk-tokens", o->chunk_tokens, "Prefill tokens per sequence per step")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 14));
  cmd->add_option("--slo-interactive", o->slo_interactive,
                  "Default targets of interactive requests (default ttft=500ms,tpot=100ms)");
  cmd->add_option("--slo-batch", o->slo_batch, "Default targets of batch requests (default ttft=30s)");
  cmd->add_option("--slo-embedding", o->slo_embedding,
                  "Targets of embedding requests; ttft is the time to the embedding (default ttft=2s)");
  cmd->add_option("--chat-template", o->chat_template,
                  "Chat template family when the model has none: " "chatml, llama2, llama3, "
                  "mistral-v1, mistral-v3, mistral-v7, gemma, phi3, deepseek");
  cmd->add_option("--model-name", o->model_names,
                  "Model id clients send, one per -m in order (default: the file name without .gguf)");
  cmd->add_option("--io-threads", o->io_threads, "HTTP I/O threads (default 2)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--max-connections", o->max_connections, "Open connections at most (default 10000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--max-body", o->max_body, "Request body size at most (default 8MiB)");
  cmd->add_option("--grace", o->grace, "On SIGINT/SIGTERM, time for requests in flight (default 10s)");
  cmd->add_option("--header-timeout", o->header_timeout,
                  "Request line and headers must arrive within this (default 10s)");
  cmd->add_option("--body-timeout", o->body_timeout, "A request body must arrive within this (default 30s)");
  cmd->add_option("--idle-timeout", o->idle_timeout,
                  "A kept-alive connection waits this long for its next request (default 60s)");
  cmd->add_flag("--log-content", o->log_content, "Write prompts and outputs to the request log");
  cmd->add_option("--translate-cache", o->translate_cache,
                  "Translation cache: memory (default), off, or redis://HOST:PORT");
  cmd->add_option("--translate-cache-size", o->translate_cache_size,
                  "Bound of the in-process translation cache (default 64MiB)");
  cmd->add_option("--translate-cache-ttl", o->translate_cache_ttl,
                  "How long a cached translation is kept (default 1h)");
  cmd->add_option("--api-keys", o->api_keys,
                  "File of API keys (JSON lines of hashed keys, see `swiftlet keys add`); reloaded on SIGHUP");
  cmd->add_option("--admin-endpoints", o->admin_endpoints,
                  "With --api-keys: key (default: /metrics and /load need an admin key) or open");
  cmd->add_option("--prefix-cache-scope", o->prefix_cache_scope,
                  "With --api-keys: key (default: each key's prompts are cached apart) or global");
  cmd->add_flag("--scrub-kv", o->scrub_kv, "Zero KV cache blocks when they are freed");
  cmd->add_option("--audit-log", o->audit_log,
                  "Append one JSON line per request (key, peer, endpoint, status, tokens, latency, SHA-256 of "
                  "prompt and output; content only with --log-content) to FILE");
  cmd->add_option("--audit-log-max-size", o->audit_log_max_size, "Rotate the audit log past this size (default 100MiB)");
  cmd->add_option("--audit-log-keep", o->audit_log_keep, "Rotated audit files kept (default 5)")
      ->check(CLI::Range(1, 100));
  cmd->add_option("--stream-origins", o->stream_origins,
                  "Browser origins allowed to open /v1/translate/stream, e.g. https://app.example.com "
                  "(default: any)")
      ->delimiter(',');
  cmd->add_flag("--no-prefix-cache", o->no_prefix_cache, "Do not reuse cached prompt blocks");
  cmd->add_flag("--no-prefix-warmup", o->no_prefix_warmup,
                "Do not compute, at batch priority, the prompt of a request refused because its "
                "uncached prefix alone is over its TTFT target");
  cmd->add_option("--tls-cert", o->tls_cert,
                  "Serve HTTPS (and wss) with this PEM certificate chain (needs --tls-key); "
                  "SIGHUP reads it again");
  cmd->add_option("--tls-key", o->tls_key, "PEM private key of --tls-cert (unencrypted)");
  return {cmd, [o] { return RunServe(*o); }};
}

}  // namespace swiftlet::cli
