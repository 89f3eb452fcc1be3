// OpenAiService's translation routes: POST /v1/translate (a whole JSON
// answer) and DELETE /v1/translate/cache. The work is the translation
// service's (translate/translation_service.h); here, HTTP in and out.
#include <algorithm>
#include <mutex>
#include <utility>

#include "api/errors.h"
#include "api/translate_codec.h"
#include "http/websocket.h"
#include "core/str_cat.h"
#include "server/error_response.h"
#include "server/openai_mapping.h"
#include "server/openai_service.h"

namespace swiftlet::server {

void OpenAiService::Translate(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/translate";
  auto parsed = api::ParseTranslateRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckTranslationModel(parsed->model); !s.ok()) return void(Fail(request, route, writer, s, start));
  if (absl::Status s = CheckKeyModel(caller, models_.default_name()); !s.ok()) return void(Fail(request, route, writer, s, start));
  if (caller.key != nullptr && caller.key->latency_class == LatencyClass::kBatch) {
    parsed->priority = api::Priority::kBatch;
  }

  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  RequestLogEntry entry;
  entry.id = NextId("tr-");
  entry.method = request.method;
  entry.peer = request.remote_address;
  entry.key_id = request.principal;
  entry.endpoint = request.path;
  if (caller.key != nullptr) entry.key_id = caller.key->id;
  if (log_.log_content() || audit_ != nullptr) {
    for (const std::string& t : parsed->texts) entry.prompt += t + "\n";
  }
  auto done = [this, route, writer, entry = std::move(entry), start, caller](
                  absl::StatusOr<api::TranslateResponse> result, int64_t retry_after_ms) mutable {
    int status = 200;
    if (!result.ok()) {
      http::Headers headers;
      if (absl::IsResourceExhausted(result.status())) headers = RetryAfterFields(retry_after_ms);
      status = writer->cancelled() ? 499 : RespondError(*writer, result.status(), std::move(headers));
    } else {
      entry.prompt_tokens = result->prompt_tokens;
      entry.completion_tokens = result->completion_tokens;
      entry.cached_tokens = result->cached_tokens;
      if (caller.key != nullptr) limiter_.Settle(*caller.key, result->prompt_tokens, result->completion_tokens, 0);
      if (log_.log_content() || audit_ != nullptr) {
        for (const api::Translation& t : result->translations) entry.output += t.text + "\n";
      }
      if (writer->cancelled()) {
        status = 499;
      } else {
        RespondJson(*writer, 200, api::SerializeTranslateResponse(*result));
      }
    }
    metrics_.CountRequest(route, status);
    entry.status = status;
    entry.total_ms = Ms(NowNs() - start);
    Record(entry);
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  };
  auto job = translation_->Start(*parsed, {start, caller.scope, caller.cache_scope}, nullptr, std::move(done));
  if (!job.ok()) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    return void(Fail(request, route, writer, job.status(), start));
  }
  // A client that goes away cancels the engine work at its next step.
  writer->OnClose([weak = std::weak_ptr<translate::TranslateJob>(*job)] {
    if (auto j = weak.lock()) j->Cancel();
  });
}

void OpenAiService::ClearTranslateCache(const http::HttpRequest& request, Writer writer, const Caller& /*caller*/) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/translate/cache";
  uint64_t entries = 0;
  if (config_.translate_cache) {
    entries = config_.translate_cache->stats().entries;
    config_.translate_cache->Clear();
  }
  RespondJson(*writer, 200,
              StrCat("{\"object\":\"translate.cache\",\"cleared\":true,\"entries_before\":", entries, "}"));
  Answered(request, route, 200, start);
}

namespace {

// What the WebSocket's handlers share: the socket, held while it is open
// (a released socket closes), and the stream it feeds.
struct StreamConnection {
  std::mutex mu;
  std::shared_ptr<http::WebSocket> socket;
  std::shared_ptr<translate::LiveStream> stream;
};

}  // namespace

void OpenAiService::TranslateStream(const http::HttpRequest& request, Writer writer, const Caller& caller) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/translate/stream";
  if (const std::string_view problem = http::WebSocketUpgradeProblem(request); !problem.empty()) {
    // RFC 6455 4.4: a 426 names the version this server speaks.
    return void(Fail(request, route, writer,
                     api::WithHttpStatus(absl::InvalidArgumentError(StrCat(
                                             "/v1/translate/stream is a WebSocket: ", problem)),
                                         426),
                     start, http::Headers{{"Upgrade", "websocket"}, {"Sec-WebSocket-Version", "13"}}));
  }
  if (const std::optional<std::string_view> origin = request.headers.Get("Origin");
      origin.has_value() && !config_.stream_origins.empty() &&
      std::find(config_.stream_origins.begin(), config_.stream_origins.end(), *origin) ==
          config_.stream_origins.end()) {
    return void(Fail(request, route, writer,
                     api::WithHttpStatus(absl::PermissionDeniedError(StrCat("origin ", *origin, " is not allowed")), 403),
                     start));
  }
  if (!chat_.ok()) {
    return void(Fail(request, route, writer,
                     absl::InvalidArgumentError(StrCat("translation needs a chat template: ", chat_.status().message())),
                     start));
  }
  if (absl::Status s = CheckKeyModel(caller, models_.default_name()); !s.ok()) return void(Fail(request, route, writer, s, start));
  auto options = translate::ParseLiveStreamQuery(request.query, translation_->languages());
  if (!options.ok()) return void(Fail(request, route, writer, options.status(), start));
  options->scope = caller.scope;
  options->cache_scope = caller.cache_scope;

  auto conn = std::make_shared<StreamConnection>();
  // The stream's sender holds its connection weakly: the connection owns the
  // stream, and a strong pointer back would keep both alive forever.
  std::weak_ptr<StreamConnection> weak_conn = conn;
  conn->stream = translate::LiveStream::Create(*translation_, *std::move(options), [weak_conn](std::string message) {
    std::shared_ptr<StreamConnection> owner = weak_conn.lock();
    if (owner == nullptr) return;
    std::shared_ptr<http::WebSocket> socket;
    {
      std::lock_guard<std::mutex> lock(owner->mu);
      socket = owner->socket;
    }
    if (socket != nullptr) socket->SendText(std::move(message));
  });
  http::WebSocketOptions wo;
  wo.max_message_bytes = 64 << 10;  // A comment is at most 4 KiB of text; room for JSON escapes.
  http::WebSocketHandlers handlers;
  handlers.on_message = [conn](std::string text) { conn->stream->OnMessage(text); };
  // The caller (and its in-flight slot) lives as long as the stream.
  handlers.on_close = [this, conn, request_id = NextId("ws-"), method = request.method, path = request.path,
                       peer = request.remote_address, start, caller](int code, std::string /*reason*/) {
    conn->stream->Close();
    {
      std::lock_guard<std::mutex> lock(conn->mu);
      conn->socket.reset();
    }
    RequestLogEntry entry;
    entry.id = request_id;
    entry.method = method;
    entry.endpoint = path;
    entry.peer = peer;
    entry.status = code;  // The close code: how the stream ended.
    if (caller.key != nullptr) entry.key_id = caller.key->id;
    entry.total_ms = Ms(NowNs() - start);
    Record(entry);
  };
  std::shared_ptr<http::WebSocket> socket = writer->AcceptWebSocket(wo, std::move(handlers));
  if (socket == nullptr) {
    conn->stream->Close();
    return;  // The connection is gone (or the server is stopping).
  }
  {
    std::lock_guard<std::mutex> lock(conn->mu);
    conn->socket = socket;
  }
  metrics_.CountRequest(route, 101);
  streams_->Add(conn->stream);
}

}  // namespace swiftlet::server
