#include "server/openai_service.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "api/request_codec.h"
#include "api/response_codec.h"
#include "core/clock.h"
#include "core/str_cat.h"
#include "server/error_response.h"
#include "server/embedding_call.h"
#include "server/generation_call.h"
#include "server/prometheus_text.h"

namespace swiftlet::server {
namespace {

std::string Hex(uint64_t v, int width) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%0*llx", width, static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

OpenAiService::OpenAiService(const Tokenizer& tokenizer, absl::StatusOr<ChatTemplate> chat,
                             Engine& engine, absl::StatusOr<Pooling> pooling, RequestLog& log,
                             ServiceConfig config, AuditLog* audit)
    : tokenizer_(tokenizer),
      chat_(std::move(chat)),
      engine_(engine),
      pooling_(std::move(pooling)),
      log_(log),
      audit_(audit),
      config_(std::move(config)),
      created_(static_cast<int64_t>(std::time(nullptr))) {
  defaults_.context = engine_.context();
  defaults_.max_tokens_cap = config_.max_tokens_cap;
  config_.limits.max_n = engine_.config().max_n;
  config_.limits.max_tokens_limit = static_cast<int32_t>(
      config_.max_tokens_cap > 0 ? std::min<int64_t>(config_.max_tokens_cap, engine_.context())
                                 : engine_.context());
  keys_ = config_.api_keys;
  translate::TranslationServiceConfig tc;
  tc.model_name = config_.model_name;
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
  router_.Add("POST", "/tokenize", bind(&OpenAiService::Tokenize));
  router_.Add("POST", "/detokenize", bind(&OpenAiService::Detokenize));
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
  const bool admin_route = route == "/metrics" || route == "/load" || route == "/stats" ||
                           route == "/v1/translate/cache" || route == "/v1/cache";
  if (admin_route && config_.admin_endpoints_open && route != "/v1/translate/cache" && route != "/v1/cache") {
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

absl::Status OpenAiService::CheckKeyModel(const Caller& caller) const {
  if (caller.key == nullptr || caller.key->MayUseModel(config_.model_name)) return absl::OkStatus();
  return api::WithParam(absl::PermissionDeniedError(StrCat("key ", caller.key->id, " may not use model '",
                                                           config_.model_name, "'")),
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
  if (e.prompt_tokens >= 0) r.model = config_.model_name;
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

absl::Status OpenAiService::CheckModel(const std::string& requested) const {
  if (requested.empty() || requested == config_.model_name) return absl::OkStatus();
  return api::WithParam(
      absl::NotFoundError(StrCat("model '", requested.substr(0, 256), "' does not exist; this server serves '",
                                 config_.model_name, "'")),
      "model");
}

absl::StatusOr<std::vector<int32_t>> OpenAiService::PromptTokens(const api::PromptInput& input,
                                                                 const std::string& param,
                                                                 bool add_bos) const {
  std::vector<int32_t> tokens;
  if (const auto* text = std::get_if<std::string>(&input)) {
    tokens = tokenizer_.Encode(*text, add_bos);
  } else {
    tokens = std::get<std::vector<int32_t>>(input);
    for (int32_t id : tokens) {
      if (id < 0 || id >= tokenizer_.n_vocab()) {
        return api::InvalidParam(param, StrCat("token id ", id, " is outside the vocabulary (",
                                               tokenizer_.n_vocab(), " tokens)"));
      }
    }
  }
  if (tokens.empty()) return api::InvalidParam(param, "the prompt has no tokens");
  return tokens;
}

absl::StatusOr<std::vector<int32_t>> OpenAiService::ChatTokens(
    const std::vector<api::ChatMessage>& messages, bool add_generation_prompt, std::string* text) const {
  if (!chat_.ok()) {
    // The template's own error says what to do (start with --chat-template).
    return api::WithParam(absl::InvalidArgumentError(chat_.status().message()), "messages");
  }
  SWIFTLET_ASSIGN_OR_RETURN(std::vector<ChatMessage> turns, ToTemplateMessages(messages));
  auto pieces = chat_->Render(turns, add_generation_prompt);
  if (!pieces.ok()) return api::WithParam(pieces.status(), "messages");
  std::vector<TextPiece> parts;
  for (const ChatPiece& p : *pieces) {
    parts.push_back({p.text, !p.from_user});
    if (text != nullptr) *text += p.text;
  }
  std::vector<int32_t> tokens = tokenizer_.EncodeMixed(parts, /*add_bos=*/false);
  if (tokens.empty()) return api::InvalidParam("messages", "the rendered conversation has no tokens");
  return tokens;
}

void OpenAiService::Completions(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/completions";
  auto parsed = api::ParseCompletionRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckModel(parsed->model); !s.ok()) {
    return void(Fail(request, route, writer, s, start));
  }
  if (absl::Status s = CheckKeyModel(caller); !s.ok()) return void(Fail(request, route, writer, s, start));
  std::vector<std::vector<int32_t>> prompts;
  std::string prompt_text;
  for (size_t i = 0; i < parsed->prompts.size(); ++i) {
    const std::string param = parsed->prompts.size() == 1 ? "prompt" : StrCat("prompt[", i, "]");
    auto tokens = PromptTokens(parsed->prompts[i], param, tokenizer_.add_bos_token());
    if (!tokens.ok()) return void(Fail(request, route, writer, tokens.status(), start));
    prompts.push_back(*std::move(tokens));
    if (log_.log_content() || audit_ != nullptr) {
      if (const auto* t = std::get_if<std::string>(&parsed->prompts[i])) prompt_text += *t;
    }
  }
  Generate(request, std::move(writer), caller, GenerationEndpoint::kCompletions, std::move(prompts),
           parsed->options, parsed->logprobs.has_value() ? *parsed->logprobs : -1,
           std::move(prompt_text));
}

void OpenAiService::ChatCompletions(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/chat/completions";
  auto parsed = api::ParseChatCompletionRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckModel(parsed->model); !s.ok()) {
    return void(Fail(request, route, writer, s, start));
  }
  if (absl::Status s = CheckKeyModel(caller); !s.ok()) return void(Fail(request, route, writer, s, start));
  std::string text;
  auto tokens = ChatTokens(parsed->messages, /*add_generation_prompt=*/true,
                           log_.log_content() || audit_ != nullptr ? &text : nullptr);
  if (!tokens.ok()) return void(Fail(request, route, writer, tokens.status(), start));
  std::vector<std::vector<int32_t>> prompts;
  prompts.push_back(*std::move(tokens));
  Generate(request, std::move(writer), caller, GenerationEndpoint::kChat, std::move(prompts), parsed->options,
           parsed->logprobs ? parsed->top_logprobs.value_or(0) : -1, std::move(text));
}

void OpenAiService::Generate(const http::HttpRequest& request, Writer writer, const Caller& caller,
                             GenerationEndpoint endpoint, std::vector<std::vector<int32_t>> prompts,
                             const api::GenerationOptions& options, int32_t top_logprobs,
                             std::string prompt_text) {
  const int64_t start = ReceivedNs(request);
  const bool chat = endpoint == GenerationEndpoint::kChat;
  const std::string route = chat ? "/v1/chat/completions" : "/v1/completions";
  // Options per prompt (max_tokens defaults depend on the prompt's length).
  std::vector<RequestOptions> engine_options;
  for (size_t i = 0; i < prompts.size(); ++i) {
    std::mt19937_64 seed_source(NextSeed());
    auto o = ToEngineOptions(options, endpoint, static_cast<int64_t>(prompts[i].size()), top_logprobs,
                             defaults_, seed_source);
    if (!o.ok()) return void(Fail(request, route, writer, o.status(), start));
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
      return void(Fail(request, route, writer, api::WithErrorCode(absl::ResourceExhaustedError(d.message), d.code),
                       start, RetryAfterFields(d.retry_after_ms)));
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
  spec.model = config_.model_name;
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
  auto done = [this, route, entry = std::move(entry), start, caller, charged](const GenerationSummary& s) mutable {
    if (caller.key != nullptr) {
      limiter_.Settle(*caller.key, s.usage.prompt_tokens, s.usage.completion_tokens,
                      charged - s.usage.prompt_tokens - s.usage.completion_tokens);
    }
    metrics_.CountRequest(route, s.http_status);
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
  };
  auto call = GenerationCall::Create(std::move(spec), tokenizer_, writer, engine_, std::move(done));

  std::vector<uint64_t> ids;
  for (size_t i = 0; i < prompts.size(); ++i) {
    Request r;
    r.prompt = std::move(prompts[i]);
    r.options = std::move(engine_options[i]);
    r.sink = call->SinkFor(i);
    r.received_ns = start;
    r.cache_scope = caller.cache_scope;
    const SubmitResult result = engine_.Submit(std::move(r));
    if (!result.accepted()) {
      auto [status, headers] = RefusalAnswer(result);
      call->Abort(std::move(ids), status, std::move(headers));
      return;
    }
    ids.push_back(result.id);
  }
  call->Start(std::move(ids));
}

void OpenAiService::Embeddings(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/embeddings";
  auto parsed = api::ParseEmbeddingRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckModel(parsed->model); !s.ok()) {
    return void(Fail(request, route, writer, s, start));
  }
  if (absl::Status s = CheckKeyModel(caller); !s.ok()) return void(Fail(request, route, writer, s, start));
  if (!pooling_.ok()) {
    return void(Fail(request, route, writer,
                     absl::UnimplementedError(StrCat("embeddings are off: ", pooling_.status().message())), start));
  }
  std::vector<std::vector<int32_t>> inputs;
  for (size_t i = 0; i < parsed->inputs.size(); ++i) {
    const std::string param = parsed->inputs.size() == 1 ? "input" : StrCat("input[", i, "]");
    auto tokens = PromptTokens(parsed->inputs[i], param, tokenizer_.add_bos_token());
    if (!tokens.ok()) return void(Fail(request, route, writer, tokens.status(), start));
    if (static_cast<int64_t>(tokens->size()) > engine_.context()) {
      return void(Fail(request, route, writer,
                       api::InvalidParam(param, StrCat(tokens->size(), " tokens; at most ", engine_.context())),
                       start));
    }
    inputs.push_back(*std::move(tokens));
  }

  // One engine request per input, in the embedding class: the engine's
  // batches, admission and compute pool serve them beside generation.
  EmbeddingCallSpec spec;
  spec.model = config_.model_name;
  spec.encoding = parsed->encoding;
  spec.inputs = inputs.size();
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  RequestLogEntry entry;
  entry.id = NextId("embd-");
  entry.method = request.method;
  entry.peer = request.remote_address;
  entry.key_id = request.principal;
  entry.endpoint = request.path;
  auto done = [this, route, entry = std::move(entry), start](const EmbeddingSummary& s) mutable {
    metrics_.CountRequest(route, s.http_status);
    entry.status = s.http_status;
    entry.prompt_tokens = s.usage.prompt_tokens;
    if (s.usage.prompt_tokens > 0) entry.queue_ms = Ms(s.timings.queued_ns);
    entry.total_ms = Ms(NowNs() - start);
    Record(entry);
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  };
  auto call = EmbeddingCall::Create(std::move(spec), writer, engine_, std::move(done));
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Request r;
    r.prompt = std::move(inputs[i]);
    r.options.embedding = true;
    r.options.pooling = *pooling_;
    r.options.latency_class = LatencyClass::kEmbedding;
    r.sink = call->SinkFor(i);
    r.received_ns = start;
    r.cache_scope = caller.cache_scope;  // Its blocks are committed: keep them in the scope.
    const SubmitResult result = engine_.Submit(std::move(r));
    if (!result.accepted()) {
      auto [status, headers] = RefusalAnswer(result);
      call->Abort(std::move(ids), status, std::move(headers));
      return;
    }
    ids.push_back(result.id);
  }
  call->Start(std::move(ids));
}

void OpenAiService::Models(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  RespondJson(*writer, 200, api::SerializeModelList({{config_.model_name, created_, "swiftlet"}}));
  Answered(request, "/v1/models", 200, start);
}

void OpenAiService::ModelById(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const std::string_view id = std::string_view(request.path).substr(std::string_view("/v1/models/").size());
  if (id != config_.model_name) {
    return void(Fail(request, "/v1/models/{id}", writer, CheckModel(std::string(id)), start));
  }
  nlohmann::json j = {{"id", config_.model_name}, {"object", "model"}, {"created", created_},
                      {"owned_by", "swiftlet"}};
  RespondJson(*writer, 200, j.dump());
  Answered(request, "/v1/models/{id}", 200, start);
}

void OpenAiService::Tokenize(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/tokenize";
  auto parsed = api::ParseTokenizeRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckModel(parsed->model); !s.ok()) {
    return void(Fail(request, route, writer, s, start));
  }
  std::vector<int32_t> tokens;
  if (parsed->prompt.has_value()) {
    tokens = tokenizer_.Encode(*parsed->prompt, parsed->add_special_tokens && tokenizer_.add_bos_token());
  } else {
    auto t = ChatTokens(parsed->messages, parsed->add_generation_prompt, nullptr);
    if (!t.ok()) return void(Fail(request, route, writer, t.status(), start));
    tokens = *std::move(t);
  }
  RespondJson(*writer, 200, api::SerializeTokenizeResponse(tokens, engine_.context()));
  Answered(request, route, 200, start);
}

void OpenAiService::Detokenize(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/detokenize";
  auto parsed = api::ParseDetokenizeRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckModel(parsed->model); !s.ok()) {
    return void(Fail(request, route, writer, s, start));
  }
  for (size_t i = 0; i < parsed->tokens.size(); ++i) {
    const int32_t id = parsed->tokens[i];
    if (id < 0 || id >= tokenizer_.n_vocab()) {
      return void(Fail(request, route, writer,
                       api::InvalidParam(StrCat("tokens[", i, "]"),
                                         StrCat("token id ", id, " is outside the vocabulary")),
                       start));
    }
  }
  RespondJson(*writer, 200, api::SerializeDetokenizeResponse(tokenizer_.Decode(parsed->tokens)));
  Answered(request, route, 200, start);
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
  std::string body = metrics_.Format(engine_.metrics(), config_.model_name, connections_ ? connections_() : 0,
                                     log_.dropped());
  const translate::CacheStats cache = config_.translate_cache ? config_.translate_cache->stats() : translate::CacheStats{};
  body += FormatTranslatePrometheus(translate_metrics_, config_.translate_cache ? &cache : nullptr);
  body += FormatKeyMetrics();
  const EngineConfig& cfg = engine_.config();
  body += FormatSloTargets(cfg.slo_interactive, cfg.slo_batch, cfg.slo_embedding);
  writer->Respond(200, http::Headers{{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}},
                  std::move(body));
}

}  // namespace swiftlet::server
