// WordPiece (tokenizer.ggml.model = "bert"), the tokenizer of BERT-family
// embedding models such as BGE, as Hugging Face's BertTokenizer(Fast) encodes:
//
//   1. basic tokenization: NUL, U+FFFD and control characters (category C*
//      other than \t \n \r) are dropped; for an uncased model the text is
//      NFD-normalized, nonspacing marks (Mn) are removed and it is lowercased;
//      it is split at whitespace (\t \n \r and Z*), and every punctuation
//      character (Unicode P* and the ASCII symbol ranges 33-47, 58-64, 91-96,
//      123-126) and every CJK ideograph becomes a word of its own;
//   2. each word is cut greedily into the longest vocabulary pieces from the
//      left; a word longer than 100 characters, or one with a position where
//      no piece matches, becomes the unknown id as a whole.
//
// llama.cpp's GGUF vocabularies store a word-start piece with a "▁" (U+2581)
// prefix ("▁hello") and a continuation piece bare ("llo", which Hugging Face
// spells "##llo"); this class reads them that way.
//
// Whether the model is uncased is not in the GGUF metadata: the vocabulary
// is taken to be uncased when no normal token contains an ASCII capital
// letter (true of bert-base-uncased and BGE; cased vocabularies hold "▁The").
//
// Encode(text, add_bos) prepends [CLS] (the bos id). It does not append
// [SEP]: a caller building a BERT input (llama.cpp does, for embeddings)
// appends sep_id() itself. Decoding joins the pieces, a "▁" becoming a space,
// so the lowercased, punctuation-split text comes back ("hello , world").
// Immutable after construction; thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/tokenizer.h"

namespace swiftlet {

class WpmTokenizer final : public Tokenizer {
 public:
  // Reads the vocabulary. bos defaults to tokenizer.ggml.cls_token_id (else
  // 101), unknown to 100, sep to tokenizer.ggml.seperator_token_id (else 102),
  // as llama.cpp; ids that do not fit the vocabulary become -1.
  static absl::StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const GgufFile& file);

  // `sep_id` is -1 when the model has none.
  WpmTokenizer(Vocab vocab, int32_t sep_id);

  std::vector<int32_t> Encode(std::string_view text, bool add_bos) const override;
  std::string TokenBytes(int32_t id) const override;

  int32_t sep_id() const { return sep_id_; }
  bool uncased() const { return uncased_; }

  // Step 1 alone: the words the text splits into, normalized (for tests).
  std::vector<std::string> SplitWords(std::string_view text) const;

 protected:
  bool StartsWithSpacePrefix(int32_t id) const override;

 private:
  int32_t Lookup(std::string_view text) const;
  // Appends the pieces of one word, or the unknown id.
  void EncodeWord(std::string_view word, std::vector<int32_t>& out) const;

  // Keys point into vocab_.tokens, which never changes after construction.
  std::unordered_map<std::string_view, int32_t> text_to_id_;
  int32_t sep_id_ = -1;
  bool uncased_ = true;
  size_t max_token_size_ = 0;  // Bytes in the longest piece.
};

}  // namespace swiftlet
