// Byte-level BPE (tokenizer.ggml.model = "gpt2"): GPT-2, Llama 3, Qwen,
// DeepSeek, Falcon, MPT, StarCoder, SmolLM and the like.
//
// Encoding, as Hugging Face's ByteLevel + BPE model does it:
//
//   1. the pre-tokenizer named by tokenizer.ggml.pre splits the text into
//      words (see pretokenizer.h);
//   2. each byte of a word becomes one symbol, spelled in GPT-2's byte
//      alphabet (bytes 33-126, 161-172 and 174-255 are the code points of the
//      same value, the other 68 bytes U+0100.. in byte order);
//   3. the adjacent pair with the lowest rank in tokenizer.ggml.merges (the
//      index of its "left right" entry) merges, leftmost first on ties, until
//      no pair has a merge;
//   4. each symbol is its token id.
//
// User-defined tokens (token_type 4, such as MPT's runs of spaces) are found
// in the text first, leftmost and then longest, and emitted as they are; the
// text between them is encoded as above (Hugging Face's non-special added
// tokens, llama.cpp's partition with parse_special off). With the Llama 3
// pre-tokenizer a word that is a token by itself is emitted
// whole (ignore_merges). Control tokens never come out of text: "<|endoftext|>"
// in the text is tokenized as its characters. Any bytes, valid UTF-8 or not,
// encode to byte-alphabet symbols, so Decode(Encode(s)) == s for every s
// when the vocabulary holds all 256 byte tokens (as byte-level vocabularies do).
//
// Immutable after construction; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/pretokenizer.h"
#include "text/tokenizer.h"

namespace swiftlet {

class BpeTokenizer final : public Tokenizer {
 public:
  // Reads the vocabulary (no default bos/eos/unknown; add_bos_token defaults
  // to false), tokenizer.ggml.merges and tokenizer.ggml.pre (absent: the
  // "default" pre-tokenizer). Fails for missing or malformed merges and an
  // unknown pre-tokenizer. Merges whose parts or result are not tokens are
  // ignored.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);

  // `merges` are "left right" strings in rank order.
  BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges, PreTokenizer pre);

  std::vector<int32_t> Encode(std::string_view text, bool add_bos) const override;
  std::string TokenBytes(int32_t id) const override;

  const PreTokenizer& pre_tokenizer() const { return pre_; }
  // Whether every byte has a token, so that any bytes round-trip.
  bool has_all_bytes() const;
  // Number of merges that took part (the others named unknown tokens).
  size_t n_merges() const { return merges_.size(); }

 protected:
  bool StartsWithSpacePrefix(int32_t) const override { return false; }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;
  };

  // Appends the ids of text that holds no user-defined token.
  void EncodePlain(std::string_view text, std::vector<int32_t>& out) const;
  // Appends the ids of one pre-tokenized word.
  void EncodeWord(std::string_view word, std::vector<int32_t>& out) const;
  int32_t Lookup(std::string_view text) const;

  PreTokenizer pre_;
  // Keys point into vocab_.tokens, which never changes after construction.
  // Control and user-defined tokens are left out.
  std::unordered_map<std::string_view, int32_t> text_to_id_;
  // (left id << 32 | right id) -> merge.
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_to_id_;  // -1 where the vocab lacks the byte.
  // User-defined token ids by the first byte of their text, longest first.
  std::array<std::vector<int32_t>, 256> user_by_first_byte_;
  bool has_user_tokens_ = false;
};

// GPT-2's byte alphabet: the code point that spells byte b, and back (-1 for
// code points that spell no byte).
char32_t BpeByteToCodePoint(uint8_t b);
int BpeCodePointToByte(char32_t cp);

}  // namespace swiftlet
