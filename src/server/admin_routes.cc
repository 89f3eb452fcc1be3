// OpenAiService's operator routes that change state: DELETE /v1/cache (an
// admin key when keys are on) empties the prefix cache and the translation
// cache — the "forget what you hold" button of docs/DATA.md.
#include "core/str_cat.h"
#include "server/error_response.h"
#include "server/openai_service.h"
#include "server/prometheus_text.h"

namespace swiftlet::server {

void OpenAiService::ClearCaches(const http::HttpRequest& request, Writer writer, const Caller& /*caller*/) {
  const int64_t start = ReceivedNs(request);
  uint64_t translations = 0;
  if (config_.translate_cache) {
    translations = config_.translate_cache->stats().entries;
    config_.translate_cache->Clear();
  }
  // Applied by the engine thread at its next step (within a step's time).
  for (const LeasePtr& lease : models_.HotLeases()) lease->engine().ClearPrefixCache();
  RespondJson(*writer, 200,
              StrCat("{\"object\":\"cache\",\"cleared\":[\"prefix\",\"translation\"],\"translation_entries_before\":",
                     translations, "}"));
  Answered(request, "/v1/cache", 200, start);
}

std::string OpenAiService::FormatKeyMetrics() const {
  const auto usage = limiter_.Usage();
  if (usage.empty()) return "";
  std::string out;
  auto family = [&](const char* name, const char* type, const char* help, auto value) {
    out += StrCat("# HELP swiftlet_", name, " ", help, "\n# TYPE swiftlet_", name, " ", type, "\n");
    for (const auto& [id, u] : usage) out += StrCat("swiftlet_", name, "{key=\"", EscapePrometheusLabel(id), "\"} ", value(u), "\n");
  };
  family("key_requests_total", "counter", "Requests admitted past the API key's limits, by key id.",
         [](const KeyUsage& u) { return u.requests; });
  family("key_refused_total", "counter", "Requests refused by the API key's own limits, by key id.",
         [](const KeyUsage& u) { return u.refused; });
  family("key_prompt_tokens_total", "counter", "Prompt tokens of finished requests, by key id.",
         [](const KeyUsage& u) { return u.prompt_tokens; });
  family("key_completion_tokens_total", "counter", "Output tokens of finished requests, by key id.",
         [](const KeyUsage& u) { return u.completion_tokens; });
  family("key_requests_in_flight", "gauge", "Requests in flight, by key id.",
         [](const KeyUsage& u) { return u.in_flight; });
  return out;
}

}  // namespace swiftlet::server
