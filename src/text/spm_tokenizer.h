// SentencePiece BPE (tokenizer.ggml.model = "llama"), as llama.cpp's
// llm_tokenizer_spm encodes it:
//
//   1. every ' ' becomes "▁" (U+2581), and with add_space_prefix a "▁" is put
//      in front of non-empty text;
//   2. the text is split into UTF-8 characters (a byte that does not start a
//      valid character is a symbol of its own);
//   3. the adjacent pair whose concatenation is a vocabulary token with the
//      highest score is merged, leftmost first on ties, until no pair merges;
//   4. each symbol becomes its token, or else one "<0xXX>" byte token per
//      byte, or else the unknown id.
//
// Only normal, user-defined and unused tokens take part in merging, so control
// tokens ("<s>", "</s>") and byte tokens are never produced from plain text.
// Immutable after construction; thread-safe.
#pragma once

#include <array>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "text/tokenizer.h"

namespace swiftlet {

class SpmTokenizer final : public Tokenizer {
 public:
  // Reads the vocabulary (defaults: bos 1, eos 2, unknown 0, as llama.cpp).
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);

  explicit SpmTokenizer(Vocab vocab);

  std::vector<int32_t> Encode(std::string_view text, bool add_bos) const override;
  std::string TokenBytes(int32_t id) const override;

 protected:
  bool StartsWithSpacePrefix(int32_t id) const override;

 private:
  // The id of a mergeable token with this text, or -1.
  int32_t Lookup(std::string_view text) const;
  // Appends the ids for one final symbol.
  void EmitSymbol(std::string_view text, std::vector<int32_t>& out) const;

  // Keys point into vocab_.tokens, which never changes after construction.
  std::unordered_map<std::string_view, int32_t> text_to_id_;
  std::array<int32_t, 256> byte_to_id_;  // -1 where the vocab lacks "<0xXX>".
};

}  // namespace swiftlet
