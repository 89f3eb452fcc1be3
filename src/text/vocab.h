// The vocabulary of a GGUF model's tokenizer: the tokenizer.ggml.* metadata,
// read and validated once. Immutable after ReadVocab(); safe to share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace swiftlet {

class GgufFile;  // gguf/gguf_file.h

// Token kinds as stored in tokenizer.ggml.token_type (llama.cpp's values).
enum class TokenKind : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct Vocab {
  std::vector<std::string> tokens;  // Token text, indexed by id.
  std::vector<float> scores;        // Same length as tokens (0 when absent).
  std::vector<TokenKind> kinds;     // Same length as tokens.
  // Special ids; -1 when the model has none. All others lie in [0, size()).
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t eot_id = -1;
  int32_t unknown_id = -1;
  bool add_bos = true;
  bool add_space_prefix = true;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
};

// Reads tokens, scores, token_type, the special ids and the add_bos_token /
// add_space_prefix flags. `default_bos` etc. are used where a key is absent
// (and dropped to -1 if they do not fit the vocabulary). Fails on a missing
// or empty token list, arrays of the wrong type or length, unknown token
// types, and special ids out of range.
absl::StatusOr<Vocab> ReadVocab(const GgufFile& file, int32_t default_bos,
                                int32_t default_eos, int32_t default_unknown);

}  // namespace swiftlet
