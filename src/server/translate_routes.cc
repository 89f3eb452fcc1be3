// OpenAiService's translation routes: POST /v1/translate (a whole JSON
// answer) and DELETE /v1/translate/cache. The work is the translation
// service's (translate/translation_service.h); here, HTTP in and out.
#include <utility>

#include "api/errors.h"
#include "api/translate_codec.h"
#include "core/str_cat.h"
#include "server/error_response.h"
#include "server/openai_mapping.h"
#include "server/openai_service.h"

namespace swiftlet::server {

void OpenAiService::Translate(const http::HttpRequest& request, Writer writer) {
  const int64_t start = ReceivedNs(request);
  const std::string route = "/v1/translate";
  auto parsed = api::ParseTranslateRequest(request.body, config_.limits);
  if (!parsed.ok()) return void(Fail(request, route, writer, parsed.status(), start));
  if (absl::Status s = CheckModel(parsed->model); !s.ok()) return void(Fail(request, route, writer, s, start));

  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  RequestLogEntry entry;
  entry.id = NextId("tr-");
  entry.method = request.method;
  entry.endpoint = request.path;
  auto done = [this, route, writer, entry = std::move(entry), start](
                  absl::StatusOr<api::TranslateResponse> result, int64_t retry_after_ms) mutable {
    int status = 200;
    if (!result.ok()) {
      http::Headers headers;
      if (absl::IsResourceExhausted(result.status())) {
        const RetryAfter retry = RetryAfterHeaders(retry_after_ms);
        headers.Add("Retry-After", retry.seconds);
        headers.Add("retry-after-ms", retry.milliseconds);
      }
      status = writer->cancelled() ? 499 : RespondError(*writer, result.status(), std::move(headers));
    } else {
      entry.prompt_tokens = result->prompt_tokens;
      entry.completion_tokens = result->completion_tokens;
      entry.cached_tokens = result->cached_tokens;
      if (writer->cancelled()) {
        status = 499;
      } else {
        RespondJson(*writer, 200, api::SerializeTranslateResponse(*result));
      }
    }
    metrics_.CountRequest(route, status);
    entry.status = status;
    entry.total_ms = Ms(NowNs() - start);
    log_.Write(entry);
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  };
  auto job = translation_->Start(*parsed, {start, ""}, nullptr, std::move(done));
  if (!job.ok()) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    return void(Fail(request, route, writer, job.status(), start));
  }
  // A client that goes away cancels the engine work at its next step.
  writer->OnClose([weak = std::weak_ptr<translate::TranslateJob>(*job)] {
    if (auto j = weak.lock()) j->Cancel();
  });
}

void OpenAiService::ClearTranslateCache(const http::HttpRequest& request, Writer writer) {
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

}  // namespace swiftlet::server
