// Pure translations between the OpenAI request types (api/) and the
// engine's (engine/request.h): sampling options with the server's
// defaults, chat roles, and the HTTP answer to a refused Submit. No state,
// thread-safe; the handlers in openai_service.cc call these.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "api/types.h"
#include "core/status.h"
#include "engine/request.h"
#include "http/message.h"
#include "text/chat_template.h"

namespace swiftlet::server {

// Which endpoint a generation serves: defaults differ (OpenAI's legacy
// completions stop after 16 tokens by default; chat runs to the context).
enum class GenerationEndpoint { kCompletions, kChat };

struct GenerationDefaults {
  int64_t context = 0;          // Tokens per sequence (prompt + output).
  int32_t max_tokens_cap = 0;   // Server cap on max_tokens; 0: the context.
  int32_t completions_max_tokens = 16;
};

// Engine options for a prompt of `prompt_tokens`: OpenAI defaults
// (temperature 1, top_p 1), the class and TTFT target from `priority` and
// `ttft_target_ms`, and max_tokens from the request or the endpoint's
// default, capped so prompt + output fits the context. A max_tokens the
// request sets explicitly that does not fit is InvalidArgument naming it
// (as OpenAI answers); `top_logprobs` is -1 for none. Without a seed, one
// is drawn from `seed_source` (each unseeded request samples differently).
absl::StatusOr<RequestOptions> ToEngineOptions(const api::GenerationOptions& options,
                                               GenerationEndpoint endpoint, int64_t prompt_tokens,
                                               int32_t top_logprobs,
                                               const GenerationDefaults& defaults,
                                               std::mt19937_64& seed_source);

// Chat messages as the template renders them: "developer" is a system turn;
// a tool message is InvalidArgument naming messages[i].role.
absl::StatusOr<std::vector<ChatMessage>> ToTemplateMessages(
    const std::vector<api::ChatMessage>& messages);

// The error a refused Submit is answered with, before any response byte:
// kInvalid 400 (param from the engine's message), kNotReady 503, a load
// refusal 429 with the retry estimate (see RetryAfterHeaders), and a
// request too large for the KV cache even alone 400 (retrying cannot help).
absl::Status RefusalStatus(const SubmitResult& result);

// Retry-After (whole seconds, rounded up, at least 1) and retry-after-ms.
struct RetryAfter {
  std::string seconds;
  std::string milliseconds;
};
RetryAfter RetryAfterHeaders(int64_t retry_after_ms);
// Both fields, for a 429's answer.
http::Headers RetryAfterFields(int64_t retry_after_ms);
// What a refused Submit is answered with: RefusalStatus, and for a load
// refusal the retry fields.
std::pair<absl::Status, http::Headers> RefusalAnswer(const SubmitResult& result);

// OpenAI's finish_reason for an engine finish: "stop" or "length"
// (cancelled and error choices are reported as "stop" if a response is
// still written; the log and metrics keep the engine's reason).
const char* OpenAiFinishReason(FinishReason reason);

}  // namespace swiftlet::server
