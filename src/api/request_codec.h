// JSON codec for the OpenAI request types in api/types.h.
//
// Parsing is strict on types and lenient on unknown fields: a field the
// server does not know is ignored; a known field with the wrong type, or out
// of range, is InvalidArgument whose message names the field path and what
// was expected ("messages[2].content: expected string or array, got
// integer") and whose ErrorParam (api/errors.h) is that path. An explicit
// null is the same as an absent field. The body is checked against
// ParseLimits while it is parsed (size, nesting depth, elements per array),
// so a hostile body costs memory proportional to an accepted one.
//
// Ranges (besides ParseLimits): temperature [0, 2], top_p (0, 1],
// presence/frequency_penalty [-2, 2], top_k >= -1, min_p [0, 1],
// repetition_penalty (0, 10], min_tokens [0, max_tokens], ttft_target_ms
// >= 1, priority "interactive" | "batch", prompt/messages/input non-empty,
// token ids in [0, 2^31).
//
// Serializing writes every field that is set (optional present, or a
// non-default value), so Parse(Serialize(r)) == r for any r that parses.
//
// All functions are thread-safe (no shared state).
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "api/types.h"

namespace swiftlet::api {

absl::StatusOr<CompletionRequest> ParseCompletionRequest(std::string_view body,
                                                         const ParseLimits& limits = {});
absl::StatusOr<ChatCompletionRequest> ParseChatCompletionRequest(
    std::string_view body, const ParseLimits& limits = {});
absl::StatusOr<EmbeddingRequest> ParseEmbeddingRequest(std::string_view body,
                                                       const ParseLimits& limits = {});
absl::StatusOr<TokenizeRequest> ParseTokenizeRequest(std::string_view body,
                                                     const ParseLimits& limits = {});
absl::StatusOr<DetokenizeRequest> ParseDetokenizeRequest(std::string_view body,
                                                         const ParseLimits& limits = {});

std::string SerializeCompletionRequest(const CompletionRequest& request);
std::string SerializeChatCompletionRequest(const ChatCompletionRequest& request);
std::string SerializeEmbeddingRequest(const EmbeddingRequest& request);
std::string SerializeTokenizeRequest(const TokenizeRequest& request);
std::string SerializeDetokenizeRequest(const DetokenizeRequest& request);

}  // namespace swiftlet::api
