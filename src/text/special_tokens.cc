#include "text/special_tokens.h"

#include <algorithm>
#include <string>

namespace swiftlet {

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& vocab) : vocab_(&vocab) {
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const TokenKind kind = vocab.kinds[id];
    if (kind != TokenKind::kControl && kind != TokenKind::kUserDefined) continue;
    const std::string& text = vocab.tokens[id];
    if (text.empty()) continue;
    by_first_byte_[static_cast<unsigned char>(text[0])].push_back(id);
    ++n_tokens_;
  }
  for (std::vector<int32_t>& ids : by_first_byte_) {
    // stable_sort keeps ascending ids among equal lengths.
    std::stable_sort(ids.begin(), ids.end(), [&vocab](int32_t a, int32_t b) {
      return vocab.tokens[a].size() > vocab.tokens[b].size();
    });
  }
}

std::optional<SpecialTokenMatcher::Match> SpecialTokenMatcher::FindNext(
    std::string_view text, size_t from) const {
  if (n_tokens_ == 0) return std::nullopt;
  for (size_t pos = from; pos < text.size(); ++pos) {
    const std::vector<int32_t>& ids = by_first_byte_[static_cast<unsigned char>(text[pos])];
    const std::string_view rest = text.substr(pos);
    for (int32_t id : ids) {
      const std::string& token = vocab_->tokens[id];
      if (rest.starts_with(token)) return Match{pos, token.size(), id};
    }
  }
  return std::nullopt;
}

std::vector<int32_t> EncodeMixed(const Tokenizer& tokenizer,
                                 const SpecialTokenMatcher& matcher,
                                 std::span<const TextPiece> pieces, bool add_bos) {
  std::vector<int32_t> out;
  if (add_bos && tokenizer.bos_id() >= 0) out.push_back(tokenizer.bos_id());
  // Text waiting for the next special token (or the end), possibly gathered
  // from several pieces: llama.cpp tokenizes the whole prompt as one string,
  // so text is cut only where a special token is.
  std::string run;
  auto flush = [&] {
    if (run.empty()) return;
    const std::vector<int32_t> ids = tokenizer.Encode(run, /*add_bos=*/false);
    out.insert(out.end(), ids.begin(), ids.end());
    run.clear();
  };
  for (const TextPiece& piece : pieces) {
    const std::string_view text = piece.text;
    if (!piece.parse_special) {
      run.append(text);
      continue;
    }
    size_t pos = 0;
    while (std::optional<SpecialTokenMatcher::Match> match = matcher.FindNext(text, pos)) {
      run.append(text.substr(pos, match->offset - pos));
      flush();
      out.push_back(match->id);
      pos = match->offset + match->size;
    }
    run.append(text.substr(pos));
  }
  flush();
  return out;
}

std::vector<int32_t> EncodeWithSpecial(const Tokenizer& tokenizer,
                                       const SpecialTokenMatcher& matcher,
                                       std::string_view text, bool add_bos) {
  const TextPiece piece{std::string(text), true};
  return EncodeMixed(tokenizer, matcher, std::span<const TextPiece>(&piece, 1), add_bos);
}

std::vector<int32_t> Tokenizer::EncodeWithSpecial(std::string_view text, bool add_bos) const {
  const SpecialTokenMatcher matcher(vocab_);
  return swiftlet::EncodeWithSpecial(*this, matcher, text, add_bos);
}

std::vector<int32_t> Tokenizer::EncodeMixed(std::span<const TextPiece> pieces,
                                            bool add_bos) const {
  const SpecialTokenMatcher matcher(vocab_);
  return swiftlet::EncodeMixed(*this, matcher, pieces, add_bos);
}

}  // namespace swiftlet
