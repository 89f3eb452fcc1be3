// Text <-> token ids for a GGUF model.
//
// FromGguf() reads the tokenizer.ggml.* metadata and picks the algorithm named
// by tokenizer.ggml.model; only "llama" (SentencePiece BPE) exists so far.
// A Tokenizer is immutable once built and owns copies of everything it needs
// (it does not keep the GgufFile), so one instance may be shared by any number
// of threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "text/vocab.h"

namespace swiftlet {

class GgufFile;  // gguf/gguf_file.h

// One stretch of a prompt for Tokenizer::EncodeMixed: template text, whose
// control and user-defined token texts ("<|im_start|>", "</s>") become those
// tokens, or user content, which is always plain text.
struct TextPiece {
  std::string text;
  bool parse_special = false;
};

class Tokenizer {
 public:
  // Reads tokenizer.ggml.* metadata (model, tokens, scores, token_type,
  // bos/eos/eot/unknown ids, add_bos_token / add_space_prefix if present).
  // Fails for a missing or unsupported model kind, mismatched array lengths
  // and special ids out of range.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);

  virtual ~Tokenizer() = default;

  // Plain text -> ids. Never parses control tokens (or "<0xXX>" byte tokens)
  // out of the text: "<s>" in the text is tokenized as the characters it is.
  // add_bos prepends BOS (when the model has one).
  virtual std::vector<int32_t> Encode(std::string_view text, bool add_bos) const = 0;

  // Like Encode, but every occurrence in `text` of the text of a control or
  // user-defined token (kinds 3 and 4) becomes that token: at each position
  // the longest such text, leftmost first. The text between them goes through
  // Encode(..., false) on its own, so with SentencePiece's add_space_prefix a
  // stretch after a special token starts with the prefix space, as llama.cpp
  // tokenizes. Builds a SpecialTokenMatcher (text/special_tokens.h) each call;
  // callers encoding many prompts can keep one and use the free functions.
  std::vector<int32_t> EncodeWithSpecial(std::string_view text, bool add_bos) const;

  // Encodes the concatenation of `pieces`, parsing special tokens only inside
  // pieces with parse_special set. Adjacent text (from any pieces) between two
  // special tokens is one Encode call, so splitting text across pieces does
  // not change its tokens. EncodeMixed({{s, true}}) == EncodeWithSpecial(s),
  // EncodeMixed({{s, false}}) == Encode(s).
  std::vector<int32_t> EncodeMixed(std::span<const TextPiece> pieces, bool add_bos) const;

  // The bytes of one token as it appears in output text. Empty for control
  // tokens and for ids outside [0, n_vocab()).
  virtual std::string TokenBytes(int32_t id) const = 0;

  // Concatenated TokenBytes. When strip_leading_space is set and the model
  // adds a space prefix, the single space that prefix put in front of the
  // first token with any bytes is removed, so Decode(Encode(s)) == s.
  std::string Decode(std::span<const int32_t> ids, bool strip_leading_space = true) const;

  int32_t n_vocab() const { return vocab_.size(); }
  int32_t bos_id() const { return vocab_.bos_id; }  // -1 when none.
  int32_t eos_id() const { return vocab_.eos_id; }  // -1 when none.
  // tokenizer.ggml.add_bos_token (default true): whether prompts should
  // start with BOS.
  bool add_bos_token() const { return vocab_.add_bos; }
  // End of generation: eos, and eot when the metadata names one.
  bool IsEog(int32_t id) const {
    return id >= 0 && (id == vocab_.eos_id || id == vocab_.eot_id);
  }

  const Vocab& vocab() const { return vocab_; }

 protected:
  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}

  // Whether the text of `id`, as stored, starts with the space marker that
  // the model's encoder puts in front of the text.
  virtual bool StartsWithSpacePrefix(int32_t id) const = 0;

  Vocab vocab_;
};

}  // namespace swiftlet
