// Pre-tokenizers for byte-level BPE: the split of text into words that
// tokenizer.ggml.pre names, before any merging.
//
// Each kind reproduces its model's published split regex(es) (llama.cpp's
// llama-vocab.cpp, the models' tokenizer.json) with hand-written matchers over
// code points; Unicode categories come from utf8proc. Where a model applies
// several regexes, each one splits every piece the previous one left into its
// matches and the gaps between them (Hugging Face's Split "isolated"), so the
// pieces always concatenate back to the input.
//
// Invalid UTF-8: every byte that does not start a valid character is a code
// point of its own in no category (like an unassigned character: not a
// letter, number or space), so it lands in a piece unchanged and the bytes
// still round-trip.
//
// Immutable after FromName(); thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace swiftlet {

enum class PreTokenizerKind {
  kDefault,        // llama.cpp's default sequence (punctuation, gpt2, digits).
  kGpt2,           // gpt2, gpt-2, mpt, olmo, jais.
  kLlama3,         // llama-bpe, llama3, dbrx, smaug-bpe.
  kQwen2,          // qwen2, stablelm2: Llama 3's regex with single digits.
  kDeepseekLlm,    // deepseek-llm.
  kDeepseekCoder,  // deepseek-coder.
  kFalcon,         // falcon.
  kStarcoder,      // starcoder, refact, smollm, command-r, codeshell.
  kGpt4o,          // gpt-4o (o200k).
};

class PreTokenizer {
 public:
  // The pre-tokenizer for a tokenizer.ggml.pre value; an empty name means
  // "default". InvalidArgument names an unknown value and the supported ones.
  static absl::StatusOr<PreTokenizer> FromName(std::string_view name);

  // The accepted tokenizer.ggml.pre values, comma separated.
  static std::string SupportedNames();

  explicit PreTokenizer(PreTokenizerKind kind) : kind_(kind) {}

  PreTokenizerKind kind() const { return kind_; }

  // Whether a word that is itself a vocabulary token is emitted whole,
  // without merging (Hugging Face's ignore_merges, set for Llama 3).
  bool ignore_merges() const { return kind_ == PreTokenizerKind::kLlama3; }

  // Splits `text` into non-empty pieces that point into it and concatenate
  // back to it.
  std::vector<std::string_view> Split(std::string_view text) const;

 private:
  PreTokenizerKind kind_;
};

}  // namespace swiftlet
