// swiftlet serve: loads a model, starts the engine and the OpenAI-compatible
// HTTP server, and runs until SIGINT or SIGTERM, then shuts down in order:
// new requests get 503 while those in flight finish (up to --grace), the
// rest are cancelled, the engine stops.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "cli/commands.h"
#include "core/byte_size.h"
#include "core/duration.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "http/server.h"
#include "server/embedding_worker.h"
#include "server/openai_service.h"
#include "server/request_log.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

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

}  // namespace

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

  // Signals go to the thread that waits for them: block them before any
  // other thread starts, so every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  std::fprintf(stderr, "swiftlet: loading %s\n", o.model_path.c_str());
  auto model = Model::Load(o.model_path);
  if (!model.ok()) return ReportError(model.status());
  auto tokenizer = Tokenizer::FromGguf((*model)->file());
  if (!tokenizer.ok()) return ReportError(tokenizer.status());
  absl::StatusOr<ChatTemplate> chat = ChatTemplate::FromGguf((*model)->file(), o.chat_template);
  if (!chat.ok() && !o.chat_template.empty()) return ReportError(StrCat("--chat-template: ", chat.status().message()));
  if (!chat.ok()) {
    std::fprintf(stderr, "swiftlet: no chat template (%.*s); /v1/chat/completions answers 400\n",
                 static_cast<int>(chat.status().message().size()), chat.status().message().data());
  }

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
  cfg.prefix_cache = !o.no_prefix_cache;
  auto engine = Engine::Create(**model, **tokenizer, cfg);
  if (!engine.ok()) return ReportError(engine.status());

  auto pooling = server::PoolingFromGguf((*model)->file(), ArchitectureName((*model)->config().arch));
  std::unique_ptr<server::EmbeddingWorker> embeddings;
  if (pooling.ok()) {
    server::EmbeddingWorkerOptions eo;
    eo.threads = o.embedding_threads;
    eo.pooling = *pooling;
    eo.max_tokens = (*engine)->context();
    auto worker = server::EmbeddingWorker::Create(**model, eo);
    if (!worker.ok()) return ReportError(worker.status());
    embeddings = *std::move(worker);
  } else {
    std::fprintf(stderr, "swiftlet: embeddings off: %.*s\n",
                 static_cast<int>(pooling.status().message().size()), pooling.status().message().data());
  }

  const std::string model_name = o.model_name.empty() ? DefaultModelName(o.model_path) : o.model_name;
  server::RequestLog log(stderr, o.log_content);
  server::ServiceConfig sc;
  sc.model_name = model_name;
  sc.max_tokens_cap = o.max_tokens;
  sc.limits.max_body_bytes = *max_body;
  auto service = std::make_unique<server::OpenAiService>(**model, **tokenizer, std::move(chat), **engine,
                                                         embeddings.get(), log, sc);

  http::HttpServerOptions ho;
  ho.host = o.host;
  ho.port = static_cast<uint16_t>(o.port);
  ho.io_threads = o.io_threads;
  ho.max_connections = static_cast<size_t>(o.max_connections);
  ho.max_body_bytes = *max_body;
  ho.header_timeout = *header_timeout;
  ho.body_timeout = *body_timeout;
  ho.idle_timeout = *idle_timeout;
  server::OpenAiService* svc = service.get();
  http::HttpServer http(ho, [svc](http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
    svc->Handle(std::move(request), std::move(writer));
  });
  service->set_connection_counter([&http] { return http.open_connections(); });

  std::fprintf(stderr, "swiftlet: calibrating the engine (%d threads)\n", cfg.threads);
  (*engine)->Start();
  const EngineState state = (*engine)->state();
  std::fprintf(stderr, "swiftlet: context %lld tokens, KV cache %lld blocks of %lld tokens\n",
               static_cast<long long>((*engine)->context()), static_cast<long long>(state.kv_blocks_total),
               static_cast<long long>(cfg.kv_block_tokens));
  if (absl::Status s = http.Start(); !s.ok()) {
    (*engine)->Stop();
    return ReportError(s);
  }
  const std::string url = StrCat("http://", o.host.find(':') != std::string::npos ? StrCat("[", o.host, "]") : o.host,
                                 ":", http.port());
  std::printf("swiftlet: serving %s on %s\n", model_name.c_str(), url.c_str());
  std::printf("try: curl %s/v1/completions -H 'Content-Type: application/json' "
              "-d '{\"prompt\": \"Hello\", \"max_tokens\": 16}'\n",
              url.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&signals, &signal_number);
  std::fprintf(stderr, "swiftlet: %s: draining (grace %s)\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM",
               o.grace.c_str());
  service->BeginDrain();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(*grace);
  while (service->in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // What is still running is cancelled: its connections close, which
  // cancels the engine requests.
  http.Stop(std::chrono::milliseconds(100));
  (*engine)->Stop();
  embeddings.reset();
  std::fprintf(stderr, "swiftlet: stopped\n");
  return 0;
}

}  // namespace swiftlet::cli
