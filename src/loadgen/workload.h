// What the load generator sends: the i-th request of a run, as an HTTP
// target and a JSON body, deterministic in (seed, i) so two runs of the
// same sweep ask the same work.
//
//   synthetic      /v1/completions, a prompt of P random common words
//                  (loadgen/sample_words.h), T output tokens; with
//                  shared_prefix_words S, the P words follow S words that
//                  are the same in every request (an instruction a prefix
//                  cache can reuse: the translation workload's shape).
//   file:PATH      a JSONL file, one request body per line: an object with
//                  "messages" (sent to /v1/chat/completions) or "prompt"
//                  (/v1/completions), in OpenAI's request shape; a line may
//                  give its own "max_tokens", else T applies. Lines are used
//                  in order and cycled.
//   live-comments  /v1/chat/completions: a translation instruction shared
//                  by every request (so a prefix cache can reuse it), the
//                  target language, then a viewer's comment of P words.
//                  Each comment is sent once per target language (K
//                  requests): request i is comment i / K into language
//                  i % K.
//
// Every request streams (stream_options.include_usage, for the server's
// token counts) and forces its output length: ignore_eos, and min_tokens
// equal to max_tokens, so every request asks the same work.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace swiftlet::loadgen {

// A length drawn per request: fixed ("40") or uniform over a closed range
// ("20-60"), each value in [1, 1'000'000].
struct LengthSpec {
  int64_t min = 1;
  int64_t max = 1;

  static absl::StatusOr<LengthSpec> Parse(std::string_view text);
  int64_t Draw(std::mt19937_64& rng) const;
  std::string ToString() const;
};

struct PlannedRequest {
  std::string target;          // "/v1/completions" or "/v1/chat/completions"
  std::string body;            // JSON
  int32_t output_tokens = 0;   // max_tokens asked for (and forced)
};

struct WorkloadOptions {
  std::string model;           // Sent as "model"; empty: left out.
  LengthSpec prompt_words{40, 40};
  LengthSpec output_tokens{32, 32};
  int languages = 3;           // live-comments: K, 1..kMaxLanguages.
  int64_t shared_prefix_words = 0;  // synthetic: S, 0..kMaxSharedPrefixWords.
  uint64_t seed = 1;
};

inline constexpr int kMaxLanguages = 10;
inline constexpr int64_t kMaxSharedPrefixWords = 100'000;
// JSONL files: bounds on what is read.
inline constexpr int64_t kMaxWorkloadFileBytes = int64_t{256} << 20;
inline constexpr int64_t kMaxWorkloadLines = 1'000'000;

class Workload {
 public:
  virtual ~Workload() = default;
  // Thread-safe (const, no shared state).
  virtual PlannedRequest Make(int64_t index) const = 0;
  // How many requests each arrival brings at once (live-comments: K).
  virtual int fan_out() const { return 1; }
  virtual std::string name() const = 0;
};

// `spec` is "synthetic", "file:PATH" or "live-comments". Errors name the
// problem (an unreadable file, a bad line with its number).
absl::StatusOr<std::unique_ptr<Workload>> MakeWorkload(std::string_view spec,
                                                       const WorkloadOptions& options);

}  // namespace swiftlet::loadgen
