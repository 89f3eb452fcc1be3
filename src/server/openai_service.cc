#include "server/openai_service.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/request_codec.h"
#include "api/response_codec.h"
#include "core/check.h"
#include "core/clock.h"
#include "core/str_cat.h"
#include "server/embedding_call.h"
#include "server/engine_call.h"
#include "server/error_response.h"
#include "server/generation_call.h"
#include "server/prometheus_text.h"

namespace swiftlet::server {
namespace {

std::string Hex(uint64_t v, int width) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%0*llx", width, static_cast<unsigned long long>(v));
  return buf;
}

// The registry was started: its default model is hot and stays so.
HostedModel& DefaultModel(ModelRegistry& models) {
  HostedModel* model = models.Pinned(models.default_name());
  SWIFTLET_CHECK(model != nullptr);
  return *model;
}

}  // namespace

OpenAiService::OpenAiService(ModelRegistry& models, RequestLog& log, ServiceConfig config, AuditLog* audit)
    : models_(models),
      primary_(DefaultModel(models)),
      tokenizer_(*primary_.tokenizer),
      chat_(primary_.chat),
      engine_(*primary_.engine),
      log_(log),
      audit_(audit),
      config_(std::move(config)),
      created_(static_cast<int64_t>(std::time(nullptr))) {
  // Parsing bounds what no model could take; each model's context bounds
  // the rest once the request's model is known (ToEngineOptions).
  config_.limits.max_n = engine_.config().max_n;
  if (config_.max_tokens_cap > 0) config_.limits.max_tokens_limit = config_.max_tokens_cap;
  keys_ = config_.api_keys;
  translate::TranslationServiceConfig tc;
  tc.model_name = models_.default_name();
  translation_ = std::make_unique<translate::TranslationService>(
      engine_, tokenizer_, chat_, translate::LanguageTable::BuiltIn(), config_.translate_cache.get(),
      translate_metrics_, tc, engine_.config().clock);
  streams_ = std::make_unique<translate::StreamHub>();
  stats_ = std::make_unique<StatsHistory>(engine_.metrics());
  stats_->Start();
  std::random_device rd;
  seeds_.seed((static_cast<uint64_t>(rd()) << 32) ^ rd());
  id_prefix_ = Hex(seeds_() >> 16, 12);

  using R = const http::HttpRequest&;
  auto bind = [this](void (OpenAiService::*fn)(R, Writer)) {
    return [this, fn](R request, Writer writer, const Caller&) { (this->*fn)(request, std::move(writer)); };
  };
  auto bind_caller = [this](void (OpenAiService::*fn)(R, Writer, const Caller&)) {
    return [this, fn](R request, Writer writer, const Caller& caller) { (this->*fn)(request, std::move(writer), caller); };
  };
  router_.Add("POST", "/v1/completions", bind_caller(&OpenAiService::Completions));
  router_.Add("POST", "/v1/chat/completions", bind_caller(&OpenAiService::ChatCompletions));
  router_.Add("POST", "/v1/embeddings", bind_caller(&OpenAiService::Embeddings));
  router_.Add("POST", "/v1/translate", bind_caller(&OpenAiService::Translate));
  router_.Add("DELETE", "/v1/translate/cache", bind_caller(&OpenAiService::ClearTranslateCache));
  router_.Add("GET", "/v1/translate/stream", bind_caller(&OpenAiService::TranslateStream));
  router_.Add("DELETE", "/v1/cache", bind_caller(&OpenAiService::ClearCaches));
  router_.Add("GET", "/v1/models", bind(&OpenAiService::Models));
  router_.Add("GET", "/v1/models/", bind(&OpenAiService::ModelById), /*prefix=*/true);
  router_.Add("POST", "/v1/models/", bind(&OpenAiService::ModelAdmin), /*prefix=*/true);
  router_.Add("POST", "/tokenize", bind_caller(&OpenAiService::Tokenize));
  router_.Add("POST", "/detokenize", bind_caller(&OpenAiService::Detokenize));
  router_.Add("GET", "/health", bind(&OpenAiService::Health));
  router_.Add("GET", "/ready", bind(&OpenAiService::Ready));
  router_.Add("GET", "/load", bind(&OpenAiService::Load));
  router_.Add("GET", "/metrics", bind(&OpenAiService::Metrics));
  router_.Add("GET", "/probe/download", [this](R request, Writer writer, const Caller&) {
    probe_downloads_.Handle(request, std::move(writer));
  });
  router_.Add("GET", "/stats", bind(&OpenAiService::Stats));
  for (const char* page : {"/", "/playground", "/live"}) router_.Add("GET", page, bind(&OpenAiService::WebPage));
  router_.Add("GET", "/ui/", bind(&OpenAiService::WebPage), /*prefix=*/true);
}

int64_t OpenAiService::ReceivedNs(const http::HttpRequest& request) const {
  // The transport's stamp is on the system clock; an engine on a test clock
  // counts from the handler instead.
  if (engine_.config().clock == nullptr && request.received_ns > 0) return request.received_ns;
  return NowNs();
}

int64_t OpenAiService::NowNs() const {
  const Clock* clock = engine_.config().clock;
  return (clock != nullptr ? *clock : SystemClock()).NowNs();
}

std::string OpenAiService::NextId(std::string_view prefix) {
  return StrCat(prefix, id_prefix_, Hex(next_id_.fetch_add(1), 8));
}

uint64_t OpenAiService::NextSeed() {
  std::lock_guard<std::mutex> lock(seed_mu_);
  return seeds_();
}

void OpenAiService::Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
  const int64_t start = ReceivedNs(request);
  const Router::Match match = router_.Find(request.method, request.path);
  Caller caller;
  if (match.handler != nullptr) {
    http::Headers headers;
    if (absl::Status s = Authorize(request, match.route, caller, headers); !s.ok()) {
      // Over its own limits, a key is still named in the logs.
      if (caller.key != nullptr) request.principal = caller.key->id;
      Fail(request, match.route, writer, s, start, std::move(headers));
      return;
    }
    if (caller.key != nullptr) request.principal = caller.key->id;
  }
  if (match.handler == nullptr) {
    if (!match.allow.empty()) {
      Fail(request, match.route, writer,
           api::WithHttpStatus(absl::InvalidArgumentError(
                                   StrCat(request.method, " is not allowed here; use ", match.allow)),
                               405),
           start, http::Headers{{"Allow", match.allow}});
    } else {
      Fail(request, "other", writer,
           absl::NotFoundError(StrCat("no such endpoint: ", request.path.substr(0, 256))), start);
    }
    return;
  }
  const bool always = match.route == "/health" || match.route == "/ready" || match.route == "/load" ||
                      match.route == "/metrics" || match.route == "/stats";
  if (!always && draining_.load(std::memory_order_acquire)) {
    Fail(request, match.route, writer, absl::UnavailableError("the server is shutting down"), start);
    return;
  }
  (*match.handler)(request, std::move(writer), caller);
}

absl::Status OpenAiService::ReloadApiKeys(std::shared_ptr<const ApiKeyTable> table) {
  std::lock_guard<std::mutex> lock(keys_mu_);
  if (keys_ == nullptr) return absl::FailedPreconditionError("the server was started without --api-keys");
  keys_ = std::move(table);
  return absl::OkStatus();
}

absl::Status OpenAiService::Authorize(const http::HttpRequest& request, const std::string& route, Caller& caller,
                                      http::Headers& headers) {
  std::shared_ptr<const ApiKeyTable> table;
  {
    std::lock_guard<std::mutex> lock(keys_mu_);
    table = keys_;
  }
  if (table == nullptr) return absl::OkStatus();
  // Probes of liveness and readiness answer anyone (load balancers,
  // kubelets); the operators' views unless the operator opened them.
  // The browser pages hold no data: each call they make carries the key
  // the user pastes.
  if (route == "/health" || route == "/ready" || IsWebRoute(route)) return absl::OkStatus();
  const bool model_admin = route == "/v1/models/{id}" && request.method == "POST";
  const bool admin_route = route == "/metrics" || route == "/load" || route == "/stats" ||
                           route == "/v1/translate/cache" || route == "/v1/cache" || model_admin;
  if (admin_route && config_.admin_endpoints_open && route != "/v1/translate/cache" && route != "/v1/cache" &&
      !model_admin) {
    return absl::OkStatus();
  }
  std::string_view presented;
  if (auto auth = request.headers.Get("Authorization"); auth.has_value()) {
    constexpr std::string_view kBearer = "Bearer ";
    if (auth->size() > kBearer.size() && auth->substr(0, kBearer.size()) == kBearer) presented = auth->substr(kBearer.size());
  } else if (auto key = request.headers.Get("x-api-key"); key.has_value()) {
    presented = *key;
  }
  const ApiKey* key = table->Authenticate(presented);
  if (key == nullptr) {
    headers.Add("WWW-Authenticate", "Bearer");
    return api::WithErrorCode(
        absl::UnauthenticatedError(presented.empty() ? "no API key: send Authorization: Bearer <key>"
                                                     : "the API key is not valid"),
        "invalid_api_key");
  }
  if (admin_route && !key->admin) {
    return absl::PermissionDeniedError(StrCat(route, " needs an admin key; key ", key->id, " is not one"));
  }
  caller.table = table;  // Keeps `key` alive, also for a refusal's log line.
  caller.key = key;
  const LimitDecision d = limiter_.Admit(*key, NowNs(), &caller.ticket);
  if (!d.ok) {
    headers = RetryAfterFields(d.retry_after_ms);
    return api::WithErrorCode(absl::ResourceExhaustedError(d.message), d.code);
  }
  if (config_.cache_scope_per_key) {
    caller.scope = key->id;
    // Any fixed mapping of ids to nonzero numbers will do: scopes only
    // need to differ.
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : key->id) h = (h ^ c) * 1099511628211ull;
    caller.cache_scope = h | 1;
  }
  return absl::OkStatus();
}

absl::Status OpenAiService::CheckKeyModel(const Caller& caller, const std::string& model) const {
  if (caller.key == nullptr || caller.key->MayUseModel(model)) return absl::OkStatus();
  return api::WithParam(
      absl::PermissionDeniedError(StrCat("key ", caller.key->id, " may not use model '", model.substr(0, 256), "'")),
      "model");
}

void OpenAiService::WithModel(const http::HttpRequest& request, const std::string& route, Writer writer,
                              const Caller& caller, const std::string& model, LatencyClass latency_class,
                              std::optional<int64_t> ttft_target_ms, WithModelFn then) {
  const int64_t start = ReceivedNs(request);
  const std::string& name = models_.Resolve(model);
  if (!models_.Has(name)) {
    return void(Fail(request, route, writer,
                     api::WithParam(absl::NotFoundError(StrCat("model '", name.substr(0, 256),
                                                               "' does not exist; see GET /v1/models")),
                                    "model"),
                     start));
  }
  if (absl::Status s = CheckKeyModel(caller, name); !s.ok()) return void(Fail(request, route, writer, s, start));
  // The hot path: no copy of the request.
  if (LeasePtr lease = models_.TryAcquireHot(name); lease != nullptr) {
    return then(request, std::move(writer), std::move(lease));
  }
  // Cold or loading: the request may wait what is left of its TTFT target
  // (TTFT counts from its first byte, so the wait is in it).
  const EngineConfig& cfg = engine_.config();
  const LatencyTargets& targets = latency_class == LatencyClass::kBatch       ? cfg.slo_batch
                                  : latency_class == LatencyClass::kEmbedding ? cfg.slo_embedding
                                                                              : cfg.slo_interactive;
  int64_t target = targets.ttft_ns > 0 ? targets.ttft_ns : 30 * kNsPerSecond;
  if (ttft_target_ms.has_value()) target = std::min(target, *ttft_target_ms * kNsPerMs);
  const int64_t wait = std::max<int64_t>(0, start + target - NowNs());
  auto held = std::make_shared<http::HttpRequest>(request);
  // Waiting counts as in flight: shutdown waits for it, and the service
  // outlives it.
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  models_.Acquire(name, wait, [this, held, route, writer, then = std::move(then), start](ModelRegistry::Answer a) mutable {
    struct Done {
      std::atomic<int64_t>& n;
      ~Done() { n.fetch_sub(1, std::memory_order_acq_rel); }
    } done{in_flight_};
    if (a.lease == nullptr) {
      http::Headers headers = a.retry_after_ms > 0 ? RetryAfterFields(a.retry_after_ms) : http::Headers{};
      return void(Fail(*held, route, writer, api::WithParam(a.status, "model"), start, std::move(headers)));
    }
    then(*held, std::move(writer), std::move(a.lease));
  });
}

absl::Status OpenAiService::CheckTranslationModel(const std::string& requested) const {
  if (requested.empty() || requested == models_.default_name()) return absl::OkStatus();
  if (!models_.Has(requested)) {
    return api::WithParam(absl::NotFoundError(StrCat("model '", requested.substr(0, 256),
                                                     "' does not exist; see GET /v1/models")),
                          "model");
  }
  return api::WithParam(absl::InvalidArgumentError(StrCat("translation runs on the default model '",
                                                          models_.default_name(), "', not '",
                                                          requested.substr(0, 256), "'")),
                        "model");
}

void OpenAiService::Record(const RequestLogEntry& e) {
  log_.Write(e);
  if (audit_ == nullptr) return;
  AuditRecord r;
  r.key_id = e.key_id;
  r.peer = e.peer;
  r.method = e.method;
  r.endpoint = e.endpoint;
  r.model = e.model;
  r.status = e.status;
  r.prompt_tokens = e.prompt_tokens;
  r.completion_tokens = e.completion_tokens;
  r.latency_ms = e.total_ms;
  r.prompt = e.prompt;
  r.output = e.output;
  audit_->Write(r);
}

void OpenAiService::Answered(const http::HttpRequest& request, const std::string& route, int status,
                             int64_t start_ns) {
  metrics_.CountRequest(route, status);
  RequestLogEntry e;
  e.id = StrCat("req-", id_prefix_, Hex(next_id_.fetch_add(1), 8));
  e.method = request.method;
  e.endpoint = request.path;
  e.status = status;
  e.total_ms = Ms(NowNs() - start_ns);
  e.key_id = request.principal;
  e.peer = request.remote_address;
  // Probes, scrapes, a dashboard's polls and its page files would drown
  // the log: only their failures are logged.
  if (status < 400 && (route == "/health" || route == "/ready" || route == "/load" || route == "/metrics" ||
                       route == "/stats" || route == "/")) {
    return;
  }
  Record(e);
}

int OpenAiService::Fail(const http::HttpRequest& request, const std::string& route, Writer& writer,
                        const absl::Status& status, int64_t start_ns, http::Headers headers) {
  const int http_status = RespondError(*writer, status, std::move(headers));
  Answered(request, route, http_status, start_ns);
  return http_status;
}

void OpenAiService::FailReleasing(LeasePtr& lease, const http::HttpRequest& request, const std::string& route,
                                  Writer& writer, const absl::Status& status, int64_t start_ns,
                                  http::Headers headers) {
  lease.reset();
  Fail(request, route, writer, status, start_ns, std::move(headers));
}

absl::StatusOr<std::vector<int32_t>> OpenAiService::PromptTokens(const Tokenizer& tokenizer,
                                                                 const api::PromptInput& input,
                                                                 const std::string& param, bool add_bos) {
  std::vector<int32_t> tokens;
  if (const auto* text = std::get_if<std::string>(&input)) {
    tokens = tokenizer.Encode(*text, add_bos);
  } else {
    tokens = std::get<std::vector<int32_t>>(input);
    for (int32_t id : tokens) {
      if (id < 0 || id >= tokenizer.n_vocab()) {
        return api::InvalidParam(param, StrCat("token id ", id, " is outside the vocabulary (",
                                               tokenizer.n_vocab(), " tokens)"));
      }
    }
  }
  if (tokens.empty()) return api::InvalidParam(param, "the prompt has no tokens");
  return tokens;
}

absl::StatusOr<std::vector<int32_t>> OpenAiService::ChatTokens(const HostedModel& model,
                                                               const std::vector<api::ChatMessage>& messages,
                                                               bool add_generation_prompt, std::string* text) {
  if (!model.chat.ok()) {
    // The template's own error says what to do (start with --chat-template).
    return api::WithParam(absl::InvalidArgumentError(model.chat.status().message()), "messages");
  }
  SWIFTLET_ASSIGN_OR_RETURN(std::vector<ChatMessage> turns, ToTemplateMessages(messages));
  auto pieces = model.chat->Render(turns, add_generation_prompt);
  if (!pieces.ok()) return api::WithParam(pieces.status(), "messages");
  std::vector<TextPiece> parts;
  for (const ChatPiece& p : *pieces) {
    parts.push_back({p.text, !p.from_user});
    if (text != nullptr) *text += p.text;
  }
  std::vector<int32_t> tokens = model.tokenizer->EncodeMixed(parts, /*add_bos=*/false);
  if (tokens.empty()) return api::InvalidParam("messages", "the rendered conversation has no tokens");
  return tokens;
}

LatencyClass ClassOf(const api::GenerationOptions& o, const Caller& caller) {
  const bool batch = o.priority == api::Priority::kBatch ||
                     (caller.key != nullptr && caller.key->latency_class == LatencyClass::kBatch);
  return batch ? LatencyClass::kBatch : LatencyClass::kInteractive;
}

void OpenAiService::Completions(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/completions";
  auto parsed = api::ParseCompletionRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  auto p = std::make_shared<api::CompletionRequest>(*std::move(parsed));
  WithModel(request, route, std::move(writer), caller, p->model, ClassOf(p->options, caller), p->options.ttft_target_ms,
            [this, p, caller, route, start](const http::HttpRequest& request, Writer writer, LeasePtr lease) {
    const Tokenizer& tokenizer = *lease->model().tokenizer;
    std::vector<std::vector<int32_t>> prompts;
    std::string prompt_text;
    for (size_t i = 0; i < p->prompts.size(); ++i) {
      const std::string param = p->prompts.size() == 1 ? "prompt" : StrCat("prompt[", i, "]");
      auto tokens = PromptTokens(tokenizer, p->prompts[i], param, tokenizer.add_bos_token());
      if (!tokens.ok()) return FailReleasing(lease, request, route, writer, tokens.status(), start);
      prompts.push_back(*std::move(tokens));
      if (log_.log_content() || audit_ != nullptr) {
        if (const auto* t = std::get_if<std::string>(&p->prompts[i])) prompt_text += *t;
      }
    }
    Generate(request, std::move(writer), caller, std::move(lease), GenerationEndpoint::kCompletions, std::move(prompts),
             p->options, p->logprobs.has_value() ? *p->logprobs : -1, std::move(prompt_text));
  });
}

void OpenAiService::ChatCompletions(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/chat/completions";
  auto parsed = api::ParseChatCompletionRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  auto p = std::make_shared<api::ChatCompletionRequest>(*std::move(parsed));
  WithModel(request, route, std::move(writer), caller, p->model, ClassOf(p->options, caller), p->options.ttft_target_ms,
            [this, p, caller, route, start](const http::HttpRequest& request, Writer writer, LeasePtr lease) {
    std::string text;
    auto tokens = ChatTokens(lease->model(), p->messages, /*add_generation_prompt=*/true,
                             log_.log_content() || audit_ != nullptr ? &text : nullptr);
    if (!tokens.ok()) return FailReleasing(lease, request, route, writer, tokens.status(), start);
    std::vector<std::vector<int32_t>> prompts;
    prompts.push_back(*std::move(tokens));
    Generate(request, std::move(writer), caller, std::move(lease), GenerationEndpoint::kChat, std::move(prompts), p->options,
             p->logprobs ? p->top_logprobs.value_or(0) : -1, std::move(text));
  });
}

void OpenAiService::Generate(const http::HttpRequest& request, Writer writer, const Caller& caller,
                             LeasePtr lease, GenerationEndpoint endpoint,
                             std::vector<std::vector<int32_t>> prompts, const api::GenerationOptions& options,
                             int32_t top_logprobs, std::string prompt_text) {
  const int64_t start = ReceivedNs(request);
  Engine& engine = lease->engine();
  GenerationDefaults defaults;
  defaults.context = engine.context();
  defaults.max_tokens_cap = config_.max_tokens_cap;
  const bool chat = endpoint == GenerationEndpoint::kChat;
  const std::string route = chat ? "/v1/chat/completions" : "/v1/completions";
  // Options per prompt (max_tokens defaults depend on the prompt's length).
  std::vector<RequestOptions> engine_options;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::mt19937_64 seed_source(NextSeed());
    auto o = ToEngineOptions(options, endpoint, static_cast<int64_t>(prompts[i].size()), top_logprobs,
                             defaults, seed_source);
    if (!o.ok()) return FailReleasing(lease, request, route, writer, o.status(), start);
    // A batch key's requests are batch whatever they ask.
    if (caller.key != nullptr && caller.key->latency_class == LatencyClass::kBatch) {
      o->latency_class = LatencyClass::kBatch;
    }
    engine_options.push_back(*std::move(o));
  }
  // The key's tokens per minute: the prompts and their longest outputs now,
  // what was not used given back at the end.
  int64_t charged = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    charged += static_cast<int64_t>(prompts[i].size()) +
               static_cast<int64_t>(engine_options[i].n) * engine_options[i].max_tokens;
  }
  if (caller.key != nullptr) {
    const LimitDecision d = limiter_.ChargeTokens(*caller.key, charged, NowNs());
    if (!d.ok) {
      return FailReleasing(lease, request, route, writer, api::WithErrorCode(absl::ResourceExhaustedError(d.message), d.code),
                       start, RetryAfterFields(d.retry_after_ms));
    }
  }

  GenerationCallSpec spec;
  spec.endpoint = endpoint;
  spec.stream = options.stream;
  spec.include_usage = options.include_usage;
  spec.logprobs = top_logprobs >= 0;
  // The audit log digests the output, so it keeps the text too.
  spec.keep_text = log_.log_content() || audit_ != nullptr;
  spec.id = NextId(chat ? "chatcmpl-" : "cmpl-");
  spec.model = lease->name();
  spec.created = static_cast<int64_t>(std::time(nullptr));
  spec.n = options.n;
  spec.prompts = prompts.size();

  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  RequestLogEntry entry;
  entry.id = spec.id;
  entry.method = request.method;
  entry.peer = request.remote_address;
  entry.key_id = request.principal;
  entry.endpoint = request.path;
  entry.prompt = std::move(prompt_text);
  if (caller.key != nullptr) entry.key_id = caller.key->id;
  // The lease lives until the call is answered (the end of `done`).
  auto done = [this, route, entry = std::move(entry), start, caller, charged,
               lease = LeasePtr(lease)](const GenerationSummary& s) mutable {
    if (caller.key != nullptr) {
      limiter_.Settle(*caller.key, s.usage.prompt_tokens, s.usage.completion_tokens,
                      charged - s.usage.prompt_tokens - s.usage.completion_tokens);
    }
    metrics_.CountRequest(route, s.http_status);
    entry.model = lease->name();
    entry.status = s.http_status;
    entry.prompt_tokens = s.usage.prompt_tokens;
    entry.completion_tokens = s.usage.completion_tokens;
    entry.cached_tokens = s.usage.cached_prompt_tokens;
    if (s.usage.prompt_tokens > 0) {
      entry.queue_ms = Ms(s.timings.queued_ns);
      if (s.timings.ttft_ns >= 0) entry.ttft_ms = Ms(s.timings.ttft_ns);
      if (s.timings.ttft_estimate_ns >= 0) entry.ttft_estimate_ms = Ms(s.timings.ttft_estimate_ns);
    }
    entry.total_ms = Ms(NowNs() - start);
    entry.finish = s.finish;
    entry.output = s.output;
    Record(entry);
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    // Answered: its requests are finished or cancelled, and the call
    // cancels nothing from now on, so the model may be unloaded.
    lease.reset();
  };
  auto call = GenerationCall::Create(std::move(spec), *lease->model().tokenizer, writer, engine, std::move(done));

  std::vector<Request> requests(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    requests[i].prompt = std::move(prompts[i]);
    requests[i].options = std::move(engine_options[i]);
    requests[i].received_ns = start;
    requests[i].cache_scope = caller.cache_scope;
  }
  SubmitAll(engine, *call, std::move(requests));
}

void OpenAiService::Embeddings(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/embeddings";
  auto parsed = api::ParseEmbeddingRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  auto p = std::make_shared<api::EmbeddingRequest>(*std::move(parsed));
  WithModel(request, route, std::move(writer), caller, p->model, LatencyClass::kEmbedding, std::nullopt,
            [this, p, caller, route, start](const http::HttpRequest& request, Writer writer, LeasePtr lease) {
    const HostedModel& model = lease->model();
    Engine& engine = lease->engine();
    if (!model.pooling.ok()) {
      return FailReleasing(lease, request, route, writer,
                       absl::UnimplementedError(StrCat("embeddings are off: ", model.pooling.status().message())),
                       start);
    }
    std::vector<std::vector<int32_t>> inputs;
    for (size_t i = 0; i < p->inputs.size(); ++i) {
      const std::string param = p->inputs.size() == 1 ? "input" : StrCat("input[", i, "]");
      auto tokens = PromptTokens(*model.tokenizer, p->inputs[i], param, model.tokenizer->add_bos_token());
      if (!tokens.ok()) return FailReleasing(lease, request, route, writer, tokens.status(), start);
      if (static_cast<int64_t>(tokens->size()) > engine.context()) {
        return FailReleasing(lease, request, route, writer,
                         api::InvalidParam(param, StrCat(tokens->size(), " tokens; at most ", engine.context())), start);
      }
      inputs.push_back(*std::move(tokens));
    }

    // One engine request per input, in the embedding class: the engine's
    // batches, admission and compute pool serve them beside generation.
    EmbeddingCallSpec spec;
    spec.model = lease->name();
    spec.encoding = p->encoding;
    spec.inputs = inputs.size();
    in_flight_.fetch_add(1, std::memory_order_acq_rel);
    RequestLogEntry entry;
    entry.id = NextId("embd-");
    entry.method = request.method;
    entry.peer = request.remote_address;
    entry.key_id = request.principal;
    entry.endpoint = request.path;
    auto done = [this, route, entry = std::move(entry), start, lease = LeasePtr(lease)](const EmbeddingSummary& s) mutable {
      metrics_.CountRequest(route, s.http_status);
      entry.model = lease->name();
      entry.status = s.http_status;
      entry.prompt_tokens = s.usage.prompt_tokens;
      if (s.usage.prompt_tokens > 0) entry.queue_ms = Ms(s.timings.queued_ns);
      entry.total_ms = Ms(NowNs() - start);
      Record(entry);
      in_flight_.fetch_sub(1, std::memory_order_acq_rel);
      lease.reset();  // Answered: the model may be unloaded from now on.
    };
    auto call = EmbeddingCall::Create(std::move(spec), writer, engine, std::move(done));
    std::vector<Request> requests(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      requests[i].prompt = std::move(inputs[i]);
      requests[i].options.embedding = true;
      requests[i].options.pooling = *model.pooling;
      requests[i].options.latency_class = LatencyClass::kEmbedding;
      requests[i].received_ns = start;
      requests[i].cache_scope = caller.cache_scope;  // Its blocks are committed: keep them in the scope.
    }
    SubmitAll(engine, *call, std::move(requests));
  });
}

namespace {

nlohmann::ordered_json ModelJson(const ModelStatus& m, int64_t created) {
  nlohmann::ordered_json j = {{"id", m.name}, {"object", "model"}, {"created", created}, {"owned_by", "swiftlet"}};
  // swiftlet's own fields: where the model is in its life.
  j["state"] = std::string(ModelStateName(m.state));
  j["pinned"] = m.pinned;
  j["memory_bytes"] = m.memory_bytes;
  j["memory_measured"] = m.memory_measured;
  j["last_used"] = m.last_used_unix_s > 0 ? nlohmann::ordered_json(m.last_used_unix_s) : nlohmann::ordered_json();
  j["requests_in_flight"] = m.in_flight;
  j["last_load_ms"] = m.last_load_ms >= 0 ? nlohmann::ordered_json(m.last_load_ms) : nlohmann::ordered_json();
  return j;
}

}  // namespace

void OpenAiService::Models(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  nlohmann::ordered_json data = nlohmann::ordered_json::array();
  for (const ModelStatus& m : models_.List()) data.push_back(ModelJson(m, created_));
  nlohmann::ordered_json j = {{"object", "list"}, {"data", std::move(data)}};
  j["memory_budget_bytes"] = models_.memory_budget_bytes();
  j["memory_in_use_bytes"] = models_.memory_in_use_bytes();
  RespondJson(*writer, 200, j.dump());
  Answered(request, "/v1/models", 200, start);
}

void OpenAiService::ModelById(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const std::string_view id = std::string_view(request.path).substr(std::string_view("/v1/models/").size());
  for (const ModelStatus& m : models_.List()) {
    if (m.name != id) continue;
    RespondJson(*writer, 200, ModelJson(m, created_).dump());
    return Answered(request, "/v1/models/{id}", 200, start);
  }
  Fail(request, "/v1/models/{id}", writer,
       api::WithParam(absl::NotFoundError(StrCat("model '", id.substr(0, 256), "' does not exist")), "model"), start);
}

void OpenAiService::ModelAdmin(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/models/{id}/load|unload";
  std::string_view rest = std::string_view(request.path).substr(std::string_view("/v1/models/").size());
  const size_t slash = rest.rfind('/');
  const std::string_view action = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  const std::string name(slash == std::string_view::npos ? rest : rest.substr(0, slash));
  if (action != "load" && action != "unload") {
    return void(Fail(request, route, writer,
                     absl::NotFoundError("no such endpoint: use POST /v1/models/{name}/load or /unload"), start));
  }
  if (name.empty() || !models_.Has(name)) {
    return void(Fail(request, route, writer,
                     api::WithParam(absl::NotFoundError(StrCat("model '", name.substr(0, 256), "' does not exist")),
                                    "model"),
                     start));
  }
  auto held = std::make_shared<http::HttpRequest>(request);
  auto answer = [this, held, route, writer, name, start](const absl::Status& s) mutable {
    if (!s.ok()) return void(Fail(*held, route, writer, s, start));
    for (const ModelStatus& m : models_.List()) {
      if (m.name == name) RespondJson(*writer, 200, ModelJson(m, created_).dump());
    }
    Answered(*held, route, 200, start);
  };
  if (action == "unload") {
    // Busy or pinned: 409.
    return models_.Unload(name, [answer](absl::Status s) mutable {
      if (absl::IsFailedPrecondition(s)) s = api::WithHttpStatus(s, 409);
      answer(s);
    });
  }
  // An operator's load may wait a minute for room (models in use).
  models_.Acquire(name, 60 * kNsPerSecond, [answer](ModelRegistry::Answer a) mutable {
    a.lease.reset();  // Released before the answer, so an unload right after finds it idle.
    answer(a.status);
  });
}

void OpenAiService::Tokenize(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/tokenize";
  auto parsed = api::ParseTokenizeRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  auto p = std::make_shared<api::TokenizeRequest>(*std::move(parsed));
  WithModel(request, route, std::move(writer), caller, p->model, LatencyClass::kInteractive, std::nullopt,
            [this, p, route, start](const http::HttpRequest& request, Writer writer, LeasePtr lease) {
    const Tokenizer& tokenizer = *lease->model().tokenizer;
    std::vector<int32_t> tokens;
    if (p->prompt.has_value()) {
      tokens = tokenizer.Encode(*p->prompt, p->add_special_tokens && tokenizer.add_bos_token());
    } else {
      auto t = ChatTokens(lease->model(), p->messages, p->add_generation_prompt, nullptr);
      if (!t.ok()) return FailReleasing(lease, request, route, writer, t.status(), start);
      tokens = *std::move(t);
    }
    std::string body = api::SerializeTokenizeResponse(tokens, lease->engine().context());
    lease.reset();
    RespondJson(*writer, 200, std::move(body));
    Answered(request, route, 200, start);
  });
}

void OpenAiService::Detokenize(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/detokenize";
  auto parsed = api::ParseDetokenizeRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  auto p = std::make_shared<api::DetokenizeRequest>(*std::move(parsed));
  WithModel(request, route, std::move(writer), caller, p->model, LatencyClass::kInteractive, std::nullopt,
            [this, p, route, start](const http::HttpRequest& request, Writer writer, LeasePtr lease) {
    const Tokenizer& tokenizer = *lease->model().tokenizer;
    for (size_t i = 0; i < p->tokens.size(); ++i) {
      const int32_t id = p->tokens[i];
      if (id < 0 || id >= tokenizer.n_vocab()) {
        return FailReleasing(lease, request, route, writer,
                         api::InvalidParam(StrCat("tokens[", i, "]"), StrCat("token id ", id, " is outside the vocabulary")),
                         start);
      }
    }
    std::string body = api::SerializeDetokenizeResponse(tokenizer.Decode(p->tokens));
    lease.reset();
    RespondJson(*writer, 200, std::move(body));
    Answered(request, route, 200, start);
  });
}

void OpenAiService::Health(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  RespondJson(*writer, 200, R"({"status":"ok"})");
  Answered(request, "/health", 200, start);
}

void OpenAiService::Ready(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  if (draining_.load(std::memory_order_acquire)) {
    return void(Fail(request, "/ready", writer, absl::UnavailableError("the server is shutting down"),
                     start));
  }
  RespondJson(*writer, 200, R"({"status":"ready"})");
  Answered(request, "/ready", 200, start);
}

void OpenAiService::Load(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const EngineState s = engine_.state();
  const int64_t used = s.kv_blocks_total - s.kv_blocks_available;
  nlohmann::ordered_json j;
  j["waiting"] = s.waiting;
  j["running"] = s.running;
  j["kv_blocks_used"] = used;
  j["kv_blocks_total"] = s.kv_blocks_total;
  j["kv_used_fraction"] = s.kv_blocks_total > 0 ? static_cast<double>(used) / s.kv_blocks_total : 0.0;
  j["queued_prompt_tokens"] = s.queued_prompt_tokens;
  j["estimated_wait_ms"] = Ms(engine_.EstimateTtftNs(1, LatencyClass::kInteractive));
  j["estimated_wait_batch_ms"] = Ms(engine_.EstimateTtftNs(1, LatencyClass::kBatch));
  // What the estimate is computed from (engine/ttft_estimator.h), so a
  // balancer or an operator can check it.
  const EngineConfig& cfg = engine_.config();
  int64_t sequences = 0, decoding = 0, prefill = 0;
  for (const QueuedRequest& q : s.requests) {
    if (q.started) sequences += q.prompt_done ? q.n : 1;
    if (q.prompt_done) decoding += q.n;
    if (!q.prompt_done) prefill += q.prefill_tokens;
  }
  j["estimate_inputs"] = {
      {"step_cost_fixed_ms", Ms(s.cost.fixed_ns)},
      {"step_cost_per_token_ms", Ms(s.cost.per_token_ns)},
      {"step_cost_per_output_ms", Ms(s.cost.per_output_ns)},
      {"step_cost_per_argmax_output_ms", Ms(s.cost.per_argmax_ns)},
      {"step_tokens", cfg.scheduler.step_tokens},
      {"chunk_tokens", cfg.scheduler.chunk_tokens},
      {"max_running", cfg.max_running},
      {"sequences_running", sequences},
      {"sequences_decoding", decoding},
      {"expected_prefill_tokens", prefill},
      {"prefill_share", s.prefill_share},
      {"ttft_error_factor", s.ttft_error_factor},
      {"kv_blocks_available", s.kv_blocks_available},
      {"kv_block_tokens", cfg.kv_block_tokens},
  };
  j["draining"] = draining_.load(std::memory_order_acquire);
  RespondJson(*writer, 200, j.dump());
  Answered(request, "/load", 200, start);
}

void OpenAiService::Metrics(const http::HttpRequest& /*request*/, Writer writer) {
  // Counted before formatting, so a scrape sees itself.
  metrics_.CountRequest("/metrics", 200);
  // Every hot model's engine, labeled by model; the leases keep them hot
  // while the text is made.
  const std::vector<LeasePtr> hot = models_.HotLeases();
  std::vector<LabeledEngineMetrics> engines;
  for (const LeasePtr& l : hot) engines.push_back({l->name(), &l->engine().metrics()});
  std::string body = metrics_.Format(engines, models_.Names(), connections_ ? connections_() : 0, log_.dropped());
  body += models_.FormatMetrics();
  const translate::CacheStats cache = config_.translate_cache ? config_.translate_cache->stats() : translate::CacheStats{};
  body += FormatTranslatePrometheus(translate_metrics_, config_.translate_cache ? &cache : nullptr);
  body += FormatKeyMetrics();
  const EngineConfig& cfg = engine_.config();
  body += FormatSloTargets(cfg.slo_interactive, cfg.slo_batch, cfg.slo_embedding);
  writer->Respond(200, http::Headers{{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
                  std::move(body));
}

}  // namespace swiftlet::server
