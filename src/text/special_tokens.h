// Finding control and user-defined token texts ("<s>", "<|im_start|>") in
// prompt text, and encoding prompts whose template parts may name them while
// user content may not.
//
// Only tokens of kind kControl or kUserDefined with non-empty text take part;
// unknown, byte and unused tokens are never matched. A SpecialTokenMatcher
// copies nothing but ids: it refers to the Vocab it was built from, which
// must outlive it. Immutable after construction; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"
#include "text/vocab.h"

namespace swiftlet {

class SpecialTokenMatcher {
 public:
  struct Match {
    size_t offset;  // Into the searched text.
    size_t size;
    int32_t id;
  };

  explicit SpecialTokenMatcher(const Vocab& vocab);

  // The first position at or after `from` where a special token's text
  // starts, with the longest such token there (lowest id on equal text).
  std::optional<Match> FindNext(std::string_view text, size_t from) const;

  // How many tokens can match.
  size_t size() const { return n_tokens_; }

 private:
  const Vocab* vocab_;
  // Per first byte: ids whose text starts with it, longest text first.
  std::array<std::vector<int32_t>, 256> by_first_byte_;
  size_t n_tokens_ = 0;
};

// Tokenizer::EncodeWithSpecial / EncodeMixed with a matcher built once from
// tokenizer.vocab().
std::vector<int32_t> EncodeWithSpecial(const Tokenizer& tokenizer,
                                       const SpecialTokenMatcher& matcher,
                                       std::string_view text, bool add_bos);
std::vector<int32_t> EncodeMixed(const Tokenizer& tokenizer,
                                 const SpecialTokenMatcher& matcher,
                                 std::span<const TextPiece> pieces, bool add_bos);

}  // namespace swiftlet
