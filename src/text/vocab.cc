#include "text/vocab.h"

#include <limits>
#include <string_view>

#include "core/str_cat.h"
#include "gguf/gguf_file.h"

namespace swiftlet {
namespace {

constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTypesKey = "tokenizer.ggml.token_type";

// An optional special id: `fallback` (or -1 if it does not fit) when absent,
// an error when present but outside the vocabulary.
absl::StatusOr<int32_t> ReadSpecialId(const GgufFile& file, std::string_view key,
                                      int32_t fallback, int32_t n_vocab) {
  if (file.Find(key) == nullptr) {
    return fallback >= 0 && fallback < n_vocab ? fallback : -1;
  }
  SWIFTLET_ASSIGN_OR_RETURN(int64_t id, file.GetInt(key));
  if (id < 0 || id >= n_vocab) {
    return absl::InvalidArgumentError(
        StrCat(key, " = ", id, " is outside the vocabulary of ", n_vocab, " tokens"));
  }
  return static_cast<int32_t>(id);
}

absl::StatusOr<bool> ReadOptionalBool(const GgufFile& file, std::string_view key,
                                      bool fallback) {
  if (file.Find(key) == nullptr) return fallback;
  return file.GetBool(key);
}

}  // namespace

absl::StatusOr<Vocab> ReadVocab(const GgufFile& file, int32_t default_bos,
                                int32_t default_eos, int32_t default_unknown) {
  Vocab vocab;
  if (file.Find(kTokensKey) == nullptr) {
    return absl::InvalidArgumentError(StrCat(kTokensKey, " is missing"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(const GgufValue* tokens, file.GetArray(kTokensKey));
  if (tokens->array_type() != GgufType::kString) {
    return absl::InvalidArgumentError(
        StrCat(kTokensKey, " must be an array of strings, not of ",
               GgufTypeName(tokens->array_type())));
  }
  if (tokens->strings().empty()) {
    return absl::InvalidArgumentError(StrCat(kTokensKey, " is empty"));
  }
  if (tokens->strings().size() >
      static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        StrCat(kTokensKey, " has ", tokens->strings().size(), " tokens, too many"));
  }
  vocab.tokens = tokens->strings();
  const uint64_t n = vocab.tokens.size();

  vocab.scores.assign(n, 0.0f);
  if (file.Find(kScoresKey) != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(const GgufValue* scores, file.GetArray(kScoresKey));
    if (scores->array_type() != GgufType::kFloat32 &&
        scores->array_type() != GgufType::kFloat64) {
      return absl::InvalidArgumentError(
          StrCat(kScoresKey, " must be an array of floats, not of ",
                 GgufTypeName(scores->array_type())));
    }
    if (scores->array_size() != n) {
      return absl::InvalidArgumentError(
          StrCat(kScoresKey, " has ", scores->array_size(), " entries but ",
                 kTokensKey, " has ", n));
    }
    for (uint64_t i = 0; i < n; ++i) {
      vocab.scores[i] = static_cast<float>(scores->ArrayDouble(i));
    }
  }

  vocab.kinds.assign(n, TokenKind::kNormal);
  if (file.Find(kTypesKey) != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(const GgufValue* types, file.GetArray(kTypesKey));
    const GgufType t = types->array_type();
    if (t == GgufType::kString || t == GgufType::kArray || t == GgufType::kBool ||
        t == GgufType::kFloat32 || t == GgufType::kFloat64) {
      return absl::InvalidArgumentError(
          StrCat(kTypesKey, " must be an array of integers, not of ", GgufTypeName(t)));
    }
    if (types->array_size() != n) {
      return absl::InvalidArgumentError(
          StrCat(kTypesKey, " has ", types->array_size(), " entries but ",
                 kTokensKey, " has ", n));
    }
    for (uint64_t i = 0; i < n; ++i) {
      const int64_t kind = types->ArrayInt64(i);
      if (kind < 0 || kind > static_cast<int64_t>(TokenKind::kByte)) {
        return absl::InvalidArgumentError(
            StrCat(kTypesKey, "[", i, "] = ", kind, " is not a known token type"));
      }
      vocab.kinds[i] = static_cast<TokenKind>(kind);
    }
  }

  const int32_t n_vocab = vocab.size();
  SWIFTLET_ASSIGN_OR_RETURN(
      vocab.bos_id, ReadSpecialId(file, "tokenizer.ggml.bos_token_id", default_bos, n_vocab));
  SWIFTLET_ASSIGN_OR_RETURN(
      vocab.eos_id, ReadSpecialId(file, "tokenizer.ggml.eos_token_id", default_eos, n_vocab));
  SWIFTLET_ASSIGN_OR_RETURN(
      vocab.eot_id, ReadSpecialId(file, "tokenizer.ggml.eot_token_id", -1, n_vocab));
  SWIFTLET_ASSIGN_OR_RETURN(
      vocab.unknown_id,
      ReadSpecialId(file, "tokenizer.ggml.unknown_token_id", default_unknown, n_vocab));
  SWIFTLET_ASSIGN_OR_RETURN(
      vocab.add_bos, ReadOptionalBool(file, "tokenizer.ggml.add_bos_token", true));
  SWIFTLET_ASSIGN_OR_RETURN(
      vocab.add_space_prefix,
      ReadOptionalBool(file, "tokenizer.ggml.add_space_prefix", true));
  return vocab;
}

}  // namespace swiftlet
