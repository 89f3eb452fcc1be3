// OpenAI response objects: plain structs, their JSON text (the server's
// side) and a lenient reader back (the load generator's and gateway's side).
//
// Shapes written:
//   completion         {"id","object":"text_completion","created","model",
//                       "choices":[{"index","text","logprobs","finish_reason"}],
//                       "usage"?}
//   chat completion    {"id","object":"chat.completion",...,
//                       "choices":[{"index","message":{"role","content"},
//                                   "logprobs","finish_reason"}], "usage"?}
//   chat chunk         {"id","object":"chat.completion.chunk",...,
//                       "choices":[{"index","delta":{"role"?,"content"?},
//                                   "logprobs","finish_reason"}], "usage"?}
//   (a completion stream chunk has the completion shape, as OpenAI's does)
//   usage              {"prompt_tokens","completion_tokens","total_tokens",
//                       "prompt_tokens_details":{"cached_tokens"}}
//   models             {"object":"list","data":[{"id","object":"model","created","owned_by"}]}
//   embeddings         {"object":"list","data":[{"object":"embedding","index","embedding"}],
//                       "model","usage":{"prompt_tokens","total_tokens"}}
//   tokenize           {"tokens":[...],"count","max_model_len"}
//   detokenize         {"prompt"}
// Logprobs follow each endpoint's own format: completions' parallel arrays
// {"tokens","token_logprobs","top_logprobs":[{token: logprob}],"text_offset"}
// and chat's {"content":[{"token","logprob","bytes","top_logprobs":[...]}]}.
//
// Text that is not valid UTF-8 is written with U+FFFD in its place.
// All functions are thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "api/types.h"

namespace swiftlet::api {

struct UsageInfo {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt_tokens_details.cached_tokens
  // total_tokens is written as prompt + completion.

  bool operator==(const UsageInfo&) const = default;
};

struct TopLogprob {
  std::string token;
  double logprob = 0;

  bool operator==(const TopLogprob&) const = default;
};

struct TokenLogprob {
  std::string token;
  double logprob = 0;
  std::vector<TopLogprob> top;  // Most likely first.
  int64_t text_offset = 0;      // Completions only: byte offset in the choice's text.

  bool operator==(const TokenLogprob&) const = default;
};

// One choice of a completion, a chat completion, or a chunk of either.
struct Choice {
  int32_t index = 0;
  // Completions: the text (or text delta). Chat: message/delta content;
  // absent in a delta that carries none.
  std::optional<std::string> text;
  // Chat only: "assistant" in a message; in a delta, set on the first chunk.
  std::string role;
  std::optional<std::vector<TokenLogprob>> logprobs;  // Absent: null.
  std::string finish_reason;                          // Empty: null.

  bool operator==(const Choice&) const = default;
};

enum class ResponseKind { kCompletion, kChatCompletion, kChatCompletionChunk };

struct CompletionResponse {
  ResponseKind kind = ResponseKind::kCompletion;
  std::string id;
  int64_t created = 0;  // Unix seconds, from the caller's clock.
  std::string model;
  std::vector<Choice> choices;
  std::optional<UsageInfo> usage;

  bool operator==(const CompletionResponse&) const = default;
};

std::string SerializeCompletionResponse(const CompletionResponse& response);
// Reads any of the three kinds (told apart by "object"). Unknown fields are
// ignored; wrong types are errors naming the field.
absl::StatusOr<CompletionResponse> ParseCompletionResponse(std::string_view body);

struct ModelInfo {
  std::string id;
  int64_t created = 0;
  std::string owned_by = "swiftlet";

  bool operator==(const ModelInfo&) const = default;
};
std::string SerializeModelList(const std::vector<ModelInfo>& models);
absl::StatusOr<std::vector<ModelInfo>> ParseModelList(std::string_view body);

struct EmbeddingResponse {
  std::string model;
  std::vector<std::vector<float>> embeddings;  // One per input, in order.
  EmbeddingEncoding encoding = EmbeddingEncoding::kFloat;  // base64: little-endian float32
  int64_t prompt_tokens = 0;

  bool operator==(const EmbeddingResponse&) const = default;
};
std::string SerializeEmbeddingResponse(const EmbeddingResponse& response);
absl::StatusOr<EmbeddingResponse> ParseEmbeddingResponse(std::string_view body);

std::string SerializeTokenizeResponse(const std::vector<int32_t>& tokens, int64_t max_model_len);
std::string SerializeDetokenizeResponse(std::string_view text);

// The SSE payloads of a stream: one event per chunk, then the terminator.
inline constexpr std::string_view kStreamDone = "[DONE]";

}  // namespace swiftlet::api
