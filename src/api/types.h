// OpenAI API request types, as the server receives them and the load
// generator sends them. Plain values: no JSON types here (api/request_codec.h
// turns them into and out of JSON).
//
// Absent optional fields mean "the server's default"; the codec never fills
// in defaults of its own, so a request re-serialized says what the client
// said. Values are range-checked at parse time (request_codec.h lists the
// ranges); a struct built in code is trusted as it is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace swiftlet::api {

// The `priority` extension: the request's latency class.
enum class Priority { kInteractive, kBatch };
const char* PriorityName(Priority p);  // "interactive" | "batch"

// One prompt as sent: text to tokenize, or token ids to use as they are.
using PromptInput = std::variant<std::string, std::vector<int32_t>>;

// Sampling and stopping fields shared by completions and chat completions.
struct GenerationOptions {
  std::optional<int32_t> max_tokens;  // [1, ParseLimits::max_tokens_limit]
  std::optional<double> temperature;  // [0, 2]
  std::optional<double> top_p;        // (0, 1]
  int32_t n = 1;                      // [1, ParseLimits::max_n]
  std::vector<std::string> stop;      // <= 4 non-empty strings of <= 256 bytes
  std::optional<int64_t> seed;
  std::optional<double> presence_penalty;   // [-2, 2]
  std::optional<double> frequency_penalty;  // [-2, 2]
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
  // Extensions (vLLM spells them the same way).
  std::optional<int32_t> top_k;                // >= -1; -1 and 0 mean off
  std::optional<double> min_p;                 // [0, 1]
  std::optional<double> repetition_penalty;    // (0, 10]
  bool ignore_eos = false;
  std::optional<int32_t> min_tokens;           // [0, max_tokens]
  std::optional<Priority> priority;
  std::optional<int64_t> ttft_target_ms;       // >= 1

  bool operator==(const GenerationOptions&) const = default;
};

// POST /v1/completions.
struct CompletionRequest {
  std::string model;                 // Empty: the server's only model.
  std::vector<PromptInput> prompts;  // `prompt`: one, or a batch (choices per prompt).
  GenerationOptions options;
  std::optional<int32_t> logprobs;   // [0, ParseLimits::max_top_logprobs]

  bool operator==(const CompletionRequest&) const = default;
};

enum class Role { kSystem, kDeveloper, kUser, kAssistant, kTool };
const char* RoleName(Role r);

struct ChatMessage {
  Role role = Role::kUser;
  // A string, or the text parts of an array concatenated in order. A null
  // content (an assistant message carrying only tool calls) is empty.
  std::string content;
  std::string name;  // Optional participant name.

  bool operator==(const ChatMessage&) const = default;
};

// POST /v1/chat/completions. `max_completion_tokens` (newer) wins over
// `max_tokens` when both are sent; either lands in options.max_tokens.
struct ChatCompletionRequest {
  std::string model;
  std::vector<ChatMessage> messages;  // Non-empty.
  GenerationOptions options;
  bool logprobs = false;
  std::optional<int32_t> top_logprobs;  // [0, max_top_logprobs]; needs logprobs

  bool operator==(const ChatCompletionRequest&) const = default;
};

enum class EmbeddingEncoding { kFloat, kBase64 };

// POST /v1/embeddings. The official SDKs ask for base64 unless told
// otherwise.
struct EmbeddingRequest {
  std::string model;
  std::vector<PromptInput> inputs;  // `input`: one or a batch, non-empty.
  EmbeddingEncoding encoding = EmbeddingEncoding::kFloat;
  std::string user;

  bool operator==(const EmbeddingRequest&) const = default;
};

// POST /tokenize: either `prompt` (text) or `messages` (rendered through the
// chat template first), not both.
struct TokenizeRequest {
  std::string model;
  std::optional<std::string> prompt;
  std::vector<ChatMessage> messages;
  bool add_special_tokens = true;
  bool add_generation_prompt = true;  // With messages.

  bool operator==(const TokenizeRequest&) const = default;
};

// POST /detokenize.
struct DetokenizeRequest {
  std::string model;
  std::vector<int32_t> tokens;

  bool operator==(const DetokenizeRequest&) const = default;
};

// Bounds the parser enforces on untrusted bodies. The server sets the caps
// from its flags and the model (max_tokens_limit <= context length).
struct ParseLimits {
  size_t max_body_bytes = size_t{8} << 20;
  int32_t max_depth = 32;               // Nested arrays/objects.
  size_t max_array_elements = 1 << 17;  // In any one array or object.
  int32_t max_n = 16;
  int32_t max_tokens_limit = 1 << 20;
  size_t max_prompts = 64;              // Batch prompts / embedding inputs.
  size_t max_stop = 4;                  // OpenAI's limits.
  size_t max_stop_bytes = 256;
  int32_t max_top_logprobs = 20;
};

}  // namespace swiftlet::api
