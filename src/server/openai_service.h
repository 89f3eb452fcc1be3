// The OpenAI-compatible endpoints of `swiftlet serve`, as one HTTP handler:
//
//   POST /v1/completions, /v1/chat/completions   generation (streamed or not)
//   POST /v1/embeddings                          pooled hidden states
//   GET  /v1/models, /v1/models/{id}
//   POST /tokenize, /detokenize
//   GET  /health (alive), /ready (engine running, not draining),
//        /load (JSON for load balancers), /metrics (Prometheus text)
//   GET  /, /playground, /live, /ui/* (the browser pages, src/web), and
//        /stats (the dashboard's JSON)                 server/web_routes.cc
//
// Handlers run on the HTTP I/O threads and do only request-sized work
// there (parse, template, tokenize, Submit); the model runs on the engine
// and embedding threads. The answer's status is settled before its first
// byte: a refused request is 429 with Retry-After and retry-after-ms.
//
// Thread-safe: Handle may run on any number of I/O threads at once. The
// model, tokenizer, engine, embedding worker and log must outlive the
// service and every request it started: stop the HTTP server, then the
// registry (its engines finish or cancel what runs and answer what waits),
// then destroy the service.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "api/types.h"
#include "engine/engine.h"
#include "engine/pooling.h"
#include "http/server.h"
#include "server/api_keys.h"
#include "server/audit_log.h"
#include "server/caller.h"
#include "server/key_limits.h"
#include "server/model_card.h"
#include "server/model_registry.h"
#include "server/openai_mapping.h"
#include "server/probe_download.h"
#include "server/request_log.h"
#include "server/router.h"
#include "server/server_metrics.h"
#include "server/stats_history.h"
#include "text/chat_template.h"
#include "text/tokenizer.h"
#include "translate/translate_metrics.h"
#include "translate/translation_cache.h"
#include "translate/live_stream.h"
#include "translate/translation_service.h"

namespace swiftlet::server {

struct ServiceConfig {
  int32_t max_tokens_cap = 0;  // 0: each model's context.
  api::ParseLimits limits;     // max_n and max_tokens_limit are set from the engine.
  // The translation cache (null: none); shared with whoever made it.
  std::shared_ptr<translate::TranslationCache> translate_cache;
  // Origins a live stream's WebSocket may come from (a browser's Origin
  // header); empty: any. Clients that send no Origin are not browsers and
  // are let in.
  std::vector<std::string> stream_origins;
  // API keys (server/api_keys.h): null, every caller is anonymous.
  std::shared_ptr<const ApiKeyTable> api_keys;
  // With keys: /metrics and /load need an admin key (false), or stay open.
  bool admin_endpoints_open = false;
  // With keys: the prefix and translation caches are per key (true), or
  // shared by every caller.
  bool cache_scope_per_key = true;
};

// The browser pages' routes (server/web_routes.cc): public even with keys.
bool IsWebRoute(std::string_view route);

class OpenAiService {
 public:
  // Serves the registry's models (started: its default model hot). A
  // model's chat template may hold an error (no usable template): chat
  // requests then get 400 with that message; so may its pooling (not
  // supported): embeddings then get 501. Translation, live streams, the
  // dashboard and /load run on the default model.
  OpenAiService(ModelRegistry& models, RequestLog& log, ServiceConfig config, AuditLog* audit = nullptr);

  // The http::HttpHandler.
  void Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer);

  // Shutdown, first stage: new work gets 503 and /ready turns 503; /health,
  // /load and /metrics still answer.
  void BeginDrain() { draining_.store(true, std::memory_order_release); }
  // Generation and embedding requests not finished yet.
  int64_t in_flight() const { return in_flight_.load(std::memory_order_acquire); }

  // Where /metrics reads the open connection count (the HTTP server's).
  void set_connection_counter(std::function<size_t()> counter) { connections_ = std::move(counter); }

  const ServerMetrics& metrics() const { return metrics_; }

  // Replaces the API key table (SIGHUP); connections and requests in
  // flight keep the table they started with. FailedPrecondition when the
  // server started without keys.
  absl::Status ReloadApiKeys(std::shared_ptr<const ApiKeyTable> table);

 private:
  using Writer = std::shared_ptr<http::ResponseWriter>;
  struct Prepared;

  void Completions(const http::HttpRequest& request, Writer writer, const Caller& caller);
  void ChatCompletions(const http::HttpRequest& request, Writer writer, const Caller& caller);
  void Embeddings(const http::HttpRequest& request, Writer writer, const Caller& caller);
  // server/translate_routes.cc
  void Translate(const http::HttpRequest& request, Writer writer, const Caller& caller);
  void ClearTranslateCache(const http::HttpRequest& request, Writer writer, const Caller& caller);
  void TranslateStream(const http::HttpRequest& request, Writer writer, const Caller& caller);
  // server/web_routes.cc
  void WebPage(const http::HttpRequest& request, Writer writer);
  void Stats(const http::HttpRequest& request, Writer writer);
  // server/admin_routes.cc
  void ClearCaches(const http::HttpRequest& request, Writer writer, const Caller& caller);
  std::string FormatKeyMetrics() const;
  void Models(const http::HttpRequest& request, Writer writer);
  void ModelById(const http::HttpRequest& request, Writer writer);
  // Admin: POST /v1/models/{name}/load and /unload.
  void ModelAdmin(const http::HttpRequest& request, Writer writer);
  void Tokenize(const http::HttpRequest& request, Writer writer, const Caller& caller);
  void Detokenize(const http::HttpRequest& request, Writer writer, const Caller& caller);
  void Health(const http::HttpRequest& request, Writer writer);
  void Ready(const http::HttpRequest& request, Writer writer);
  void Load(const http::HttpRequest& request, Writer writer);
  void Metrics(const http::HttpRequest& request, Writer writer);

  // Submits one engine request per prompt and hands the answer to a
  // GenerationCall, with the lease (released when the call is answered).
  void Generate(const http::HttpRequest& request, Writer writer, const Caller& caller, LeasePtr lease,
                GenerationEndpoint endpoint, std::vector<std::vector<int32_t>> prompts,
                const api::GenerationOptions& options, int32_t top_logprobs, std::string prompt_text);

  // Runs `then` with a lease on the model the request names (empty: the
  // default), at once when it is hot, else once it is loaded; a refusal
  // (no such model, a key that may not use it, a load longer than the
  // request may wait) is answered here. `ttft_target_ms` is the request's
  // own target, if any: with its class's it bounds the wait for a load.
  // `then` owns the lease and lets it go before it answers: for a cold
  // model it runs on the registry's thread, where an answer can reach the
  // client before `then` returns, and a client that unloads the model as
  // soon as it has its answer must find the model idle.
  using WithModelFn = std::function<void(const http::HttpRequest&, Writer, LeasePtr)>;
  void WithModel(const http::HttpRequest& request, const std::string& route, Writer writer, const Caller& caller,
                 const std::string& model, LatencyClass latency_class, std::optional<int64_t> ttft_target_ms,
                 WithModelFn then);
  // Translation runs on the default model only.
  absl::Status CheckTranslationModel(const std::string& requested) const;
  // The caller's key may use `model`.
  absl::Status CheckKeyModel(const Caller& caller, const std::string& model) const;
  // Authenticates, applies the key's rate and concurrency limits and fills
  // `caller`; an error status (401, 403, 429) is answered by the caller of
  // this.
  absl::Status Authorize(const http::HttpRequest& request, const std::string& route, Caller& caller,
                         http::Headers& headers);
  static absl::StatusOr<std::vector<int32_t>> PromptTokens(const Tokenizer& tokenizer, const api::PromptInput& input,
                                                           const std::string& param, bool add_bos);
  static absl::StatusOr<std::vector<int32_t>> ChatTokens(const HostedModel& model,
                                                         const std::vector<api::ChatMessage>& messages,
                                                         bool add_generation_prompt, std::string* text);
  // Writes the request log line and, with --audit-log, the audit line.
  void Record(const RequestLogEntry& entry);
  // Counts and logs an answer given at once (not a generation).
  void Answered(const http::HttpRequest& request, const std::string& route, int status,
                int64_t start_ns);
  int Fail(const http::HttpRequest& request, const std::string& route, Writer& writer,
           const absl::Status& status, int64_t start_ns, http::Headers headers = {});
  // Fail, with `lease` let go first (WithModelFn).
  void FailReleasing(LeasePtr& lease, const http::HttpRequest& request, const std::string& route, Writer& writer,
                     const absl::Status& status, int64_t start_ns, http::Headers headers = {});
  std::string NextId(std::string_view prefix);
  uint64_t NextSeed();
  int64_t NowNs() const;
  // When the request was received (its first byte read), for every
  // latency the service reports: the engine's TTFT counts from here.
  int64_t ReceivedNs(const http::HttpRequest& request) const;

  ModelRegistry& models_;
  // The default model (pinned: hot for the service's life): translation,
  // live streams, the dashboard and /load run on it.
  HostedModel& primary_;
  const Tokenizer& tokenizer_;
  const absl::StatusOr<ChatTemplate>& chat_;
  Engine& engine_;
  RequestLog& log_;
  AuditLog* const audit_;  // Null: no audit log.
  ServiceConfig config_;
  const int64_t created_;  // Unix seconds at start: the model's "created".
  Router router_;
  ServerMetrics metrics_;
  mutable std::mutex keys_mu_;
  std::shared_ptr<const ApiKeyTable> keys_ ABSL_GUARDED_BY(keys_mu_);
  KeyLimiter limiter_;
  translate::TranslateMetrics translate_metrics_;
  std::unique_ptr<translate::TranslationService> translation_;
  std::unique_ptr<translate::StreamHub> streams_;
  // GET /probe/download (swiftlet probe --download-mb).
  ProbeDownloads probe_downloads_;
  // The dashboard's last minutes. Its thread reads the engine's metrics;
  // the engine outlives the service, whose destruction stops the thread.
  std::unique_ptr<StatsHistory> stats_;
  std::function<size_t()> connections_;
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> in_flight_{0};
  std::atomic<uint64_t> next_id_{1};
  std::string id_prefix_;

  std::mutex seed_mu_;
  std::mt19937_64 seeds_ ABSL_GUARDED_BY(seed_mu_);
};

}  // namespace swiftlet::server
