// JSON codec of swiftlet's translation API (an extension beside OpenAI's):
// POST /v1/translate, and the messages of the live stream
// (GET /v1/translate/stream, a WebSocket). Same rules as request_codec.h:
// strict on types, lenient on unknown fields, errors name the field path;
// every list and string is bounded here, before anything is built from it.
//
// Language codes are only checked for shape here (BCP-47-like: letters,
// digits and '-', at most 16 characters); whether the server knows a code
// is the translation service's question (translate/languages.h).
//
// All functions are thread-safe (no shared state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "api/types.h"

namespace swiftlet::api {

inline constexpr size_t kMaxTranslateTexts = 64;
inline constexpr size_t kMaxTranslateLanguages = 16;
inline constexpr size_t kMaxTranslateTextBytes = 4096;    // One comment.
inline constexpr size_t kMaxGlossaryTerms = 64;           // keep and map each.
inline constexpr size_t kMaxGlossaryTermBytes = 128;
inline constexpr size_t kMaxStreamIdBytes = 128;
inline constexpr int64_t kMaxTranslateBudgetMs = 600'000;
inline constexpr int32_t kMaxTranslateTokens = 1024;

struct Glossary {
  std::vector<std::string> keep;                            // Never translated.
  std::vector<std::pair<std::string, std::string>> map;    // Term -> fixed translation.
  bool empty() const { return keep.empty() && map.empty(); }
  bool operator==(const Glossary&) const = default;
};

struct TranslateRequest {
  std::string model;
  std::vector<std::string> texts;             // 1..kMaxTranslateTexts, non-empty.
  std::vector<std::string> target_languages;  // 1..kMaxTranslateLanguages, no repeats.
  std::optional<std::string> source_language;  // Absent: detect.
  Glossary glossary;
  std::optional<int64_t> budget_ms;  // End to end per text, 1..kMaxTranslateBudgetMs.
  std::optional<int32_t> max_tokens;  // Per translation, 1..kMaxTranslateTokens.
  std::optional<std::string> stream_id;
  Priority priority = Priority::kInteractive;
  // Load testing: every translation runs to max_tokens (no end-of-text, no
  // stop at the line end), so every comment asks the same work, as the
  // chat API's ignore_eos extension does.
  bool ignore_eos = false;
  bool operator==(const TranslateRequest&) const = default;
};

struct Translation {
  int64_t index = 0;  // Into texts.
  std::string language;
  std::string text;
  bool cached = false;
  double latency_ms = 0;
  bool glossary_ok = true;
  bool late = false;  // Finished after budget_ms.
  bool operator==(const Translation&) const = default;
};

struct TranslateResponse {
  std::string model;
  std::vector<Translation> translations;  // Text-major, then language, as asked.
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // Prompt tokens not computed (prefix cache, shared part).
  bool operator==(const TranslateResponse&) const = default;
};

absl::StatusOr<TranslateRequest> ParseTranslateRequest(std::string_view body, const ParseLimits& limits = {});
std::string SerializeTranslateRequest(const TranslateRequest& request);
absl::StatusOr<TranslateResponse> ParseTranslateResponse(std::string_view body);
std::string SerializeTranslateResponse(const TranslateResponse& response);

// "en,ja,zh-Hant" (the stream's query) -> codes, shape-checked as above.
absl::StatusOr<std::vector<std::string>> ParseLanguageList(std::string_view list, std::string_view param);

// ---- The live stream's messages -----------------------------------------

// Client -> server: one comment.
struct StreamComment {
  std::string id;    // Client's, 1..kMaxStreamIdBytes; echoed in results.
  std::string text;  // 1..kMaxTranslateTextBytes.
  bool operator==(const StreamComment&) const = default;
};
absl::StatusOr<StreamComment> ParseStreamComment(std::string_view message);
std::string SerializeStreamComment(const StreamComment& comment);

// Server -> client: one language of one comment, a drop notice, or an
// error about a message the client sent.
struct StreamResult {
  std::string id;
  std::string language;
  std::string text;
  double latency_ms = 0;
  bool glossary_ok = true;
  std::string dropped;  // "" (a result), "late" or "overflow".
  std::string error;    // Non-empty: the client's message was refused (id may be empty).
  bool operator==(const StreamResult&) const = default;
};
std::string SerializeStreamResult(const StreamResult& result);
absl::StatusOr<StreamResult> ParseStreamResult(std::string_view message);

}  // namespace swiftlet::api
