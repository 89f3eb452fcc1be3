#include "server/openai_mapping.h"

#include <algorithm>
#include <cctype>

#include "api/errors.h"
#include "core/clock.h"
#include "core/str_cat.h"

namespace swiftlet::server {

absl::StatusOr<RequestOptions> ToEngineOptions(const api::GenerationOptions& g,
                                               GenerationEndpoint endpoint, int64_t prompt_tokens,
                                               int32_t top_logprobs,
                                               const GenerationDefaults& defaults,
                                               std::mt19937_64& seed_source) {
  RequestOptions o;
  const int64_t room = defaults.context - prompt_tokens;
  if (room < 1) {
    return api::InvalidParam("prompt", StrCat("the prompt has ", prompt_tokens,
                                              " tokens; the context holds ", defaults.context,
                                              " with at least one for output"));
  }
  const int64_t cap = defaults.max_tokens_cap > 0 ? defaults.max_tokens_cap : defaults.context;
  if (g.max_tokens.has_value()) {
    if (*g.max_tokens > cap) {
      return api::InvalidParam("max_tokens", StrCat("at most ", cap, " on this server"));
    }
    if (*g.max_tokens > room) {
      return api::InvalidParam(
          "max_tokens", StrCat(*g.max_tokens, " output tokens after a prompt of ", prompt_tokens,
                               " do not fit the context of ", defaults.context));
    }
    o.max_tokens = *g.max_tokens;
  } else {
    const int64_t wanted =
        endpoint == GenerationEndpoint::kCompletions ? defaults.completions_max_tokens : room;
    o.max_tokens = static_cast<int32_t>(std::min({wanted, room, cap}));
  }
  if (g.min_tokens.has_value()) {
    if (*g.min_tokens > o.max_tokens) {
      return api::InvalidParam("min_tokens", StrCat("must not exceed max_tokens (", o.max_tokens, ")"));
    }
    o.min_tokens = *g.min_tokens;
  }

  SamplingParams& s = o.sampling;
  s.temperature = static_cast<float>(g.temperature.value_or(1.0));
  s.top_p = static_cast<float>(g.top_p.value_or(1.0));
  s.top_k = std::max(0, g.top_k.value_or(0));
  s.min_p = static_cast<float>(g.min_p.value_or(0.0));
  s.repetition_penalty = static_cast<float>(g.repetition_penalty.value_or(1.0));
  s.presence_penalty = static_cast<float>(g.presence_penalty.value_or(0.0));
  s.frequency_penalty = static_cast<float>(g.frequency_penalty.value_or(0.0));
  // OpenAI's penalties count every token so far, not a recent window.
  if (s.presence_penalty != 0 || s.frequency_penalty != 0) s.penalty_last_n = -1;
  s.seed = g.seed.has_value() ? static_cast<uint64_t>(*g.seed) : seed_source();

  o.stop = g.stop;
  o.ignore_eos = g.ignore_eos;
  o.n = g.n;
  o.top_logprobs = top_logprobs;
  o.latency_class = g.priority == api::Priority::kBatch ? LatencyClass::kBatch
                                                        : LatencyClass::kInteractive;
  if (g.ttft_target_ms.has_value()) o.targets.ttft_ns = *g.ttft_target_ms * kNsPerMs;
  return o;
}

absl::StatusOr<std::vector<ChatMessage>> ToTemplateMessages(
    const std::vector<api::ChatMessage>& messages) {
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    const api::ChatMessage& m = messages[i];
    std::string role;
    switch (m.role) {
      case api::Role::kSystem:
      case api::Role::kDeveloper: role = "system"; break;
      case api::Role::kUser: role = "user"; break;
      case api::Role::kAssistant: role = "assistant"; break;
      case api::Role::kTool:
        return api::InvalidParam(StrCat("messages[", i, "].role"),
                                 "tool messages are not supported by this server");
    }
    out.push_back({std::move(role), m.content});
  }
  return out;
}

namespace {

// The engine's validation messages start with the field: "max_tokens: ...".
std::string LeadingParam(std::string_view message) {
  const size_t colon = message.find(": ");
  if (colon == std::string_view::npos || colon == 0) return "";
  const std::string_view head = message.substr(0, colon);
  const bool ident = std::all_of(head.begin(), head.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_' || ch == '.';
  });
  return ident ? std::string(head) : "";
}

}  // namespace

absl::Status RefusalStatus(const SubmitResult& result) {
  switch (result.refused) {
    case RefusalReason::kNone:
      return absl::OkStatus();
    case RefusalReason::kInvalid:
      return api::WithParam(absl::InvalidArgumentError(result.message), LeadingParam(result.message));
    case RefusalReason::kNotReady:
      return absl::UnavailableError(result.message);
    case RefusalReason::kKvMemory:
      if (result.retry_after_ms <= 0) {
        return api::WithParam(absl::InvalidArgumentError(result.message), "max_tokens");
      }
      return api::WithErrorCode(absl::ResourceExhaustedError(result.message),
                                RefusalReasonName(result.refused));
    case RefusalReason::kQueueFull:
    case RefusalReason::kQueuedTokens:
    case RefusalReason::kTtftTarget:
      return api::WithErrorCode(absl::ResourceExhaustedError(result.message),
                                RefusalReasonName(result.refused));
  }
  return absl::InternalError("unknown refusal");
}

RetryAfter RetryAfterHeaders(int64_t retry_after_ms) {
  const int64_t ms = std::max<int64_t>(1, retry_after_ms);
  return {std::to_string((ms + 999) / 1000), std::to_string(ms)};
}

const char* OpenAiFinishReason(FinishReason reason) {
  return reason == FinishReason::kLength ? "length" : "stop";
}

http::Headers RetryAfterFields(int64_t retry_after_ms) {
  const RetryAfter retry = RetryAfterHeaders(retry_after_ms);
  return http::Headers{{"Retry-After", retry.seconds}, {"retry-after-ms", retry.milliseconds}};
}

std::pair<absl::Status, http::Headers> RefusalAnswer(const SubmitResult& result) {
  absl::Status status = RefusalStatus(result);
  http::Headers headers;
  if (absl::IsResourceExhausted(status)) headers = RetryAfterFields(result.retry_after_ms);
  return {std::move(status), std::move(headers)};
}

}  // namespace swiftlet::server
