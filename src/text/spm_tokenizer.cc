#include "text/spm_tokenizer.h"

#include <queue>
#include <string>
#include <utility>

#include "core/str_cat.h"
#include "gguf/gguf_file.h"
#include "text/utf8.h"

namespace swiftlet {
namespace {

// Length of the UTF-8 character at the start of `s`, or 1 when the bytes there
// do not form a valid one (so invalid input still round-trips byte by byte).
size_t Utf8CharLength(std::string_view s) {
  const size_t n = NextUtf8(s);
  return n == 0 ? 1 : n;
}

// "<0xAB>" -> 0xAB; -1 when `text` is not of that form.
int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') {
      value |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      value |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      value |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return value;
}

// One piece of the text being merged: a doubly linked list over a vector.
struct SpmSymbol {
  int prev;
  int next;
  size_t offset;  // Into the normalized text.
  size_t size;    // 0 once merged into the symbol on its left.
};

// A candidate merge of two adjacent symbols.
struct Bigram {
  int left;
  int right;
  float score;
  size_t size;  // Combined size when queued; stale if either side changed.
};

struct BigramOrder {
  // Highest score first; on ties the leftmost pair.
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> SpmTokenizer::FromGguf(const GgufFile& file) {
  SWIFTLET_ASSIGN_OR_RETURN(Vocab vocab, ReadVocab(file, /*default_bos=*/1,
                                                   /*default_eos=*/2,
                                                   /*default_unknown=*/0));
  return std::unique_ptr<Tokenizer>(new SpmTokenizer(std::move(vocab)));
}

SpmTokenizer::SpmTokenizer(Vocab vocab) : Tokenizer(std::move(vocab)) {
  byte_to_id_.fill(-1);
  text_to_id_.reserve(vocab_.tokens.size());
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const std::string& text = vocab_.tokens[id];
    switch (vocab_.kinds[id]) {
      case TokenKind::kByte: {
        const int byte = ParseByteToken(text);
        if (byte >= 0 && byte_to_id_[byte] < 0) byte_to_id_[byte] = id;
        break;
      }
      case TokenKind::kNormal:
      case TokenKind::kUserDefined:
      case TokenKind::kUnused:
      case TokenKind::kUndefined:
        // First id wins for duplicated text.
        text_to_id_.emplace(std::string_view(text), id);
        break;
      case TokenKind::kUnknown:
      case TokenKind::kControl:
        break;
    }
  }
}

int32_t SpmTokenizer::Lookup(std::string_view text) const {
  auto it = text_to_id_.find(text);
  return it == text_to_id_.end() ? -1 : it->second;
}

void SpmTokenizer::EmitSymbol(std::string_view text, std::vector<int32_t>& out) const {
  if (int32_t id = Lookup(text); id >= 0) {
    out.push_back(id);
    return;
  }
  for (char c : text) {
    const int32_t id = byte_to_id_[static_cast<unsigned char>(c)];
    if (id >= 0) {
      out.push_back(id);
    } else if (vocab_.unknown_id >= 0) {
      out.push_back(vocab_.unknown_id);
    }
  }
}

std::vector<int32_t> SpmTokenizer::Encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  if (text.empty()) return out;

  std::string normalized;
  normalized.reserve(text.size() + kSpaceMarker.size() * 4);
  if (vocab_.add_space_prefix) normalized += kSpaceMarker;
  for (char c : text) {
    if (c == ' ') {
      normalized += kSpaceMarker;
    } else {
      normalized += c;
    }
  }
  const std::string_view norm = normalized;

  std::vector<SpmSymbol> symbols;
  symbols.reserve(norm.size());
  for (size_t offset = 0; offset < norm.size();) {
    const size_t len = Utf8CharLength(norm.substr(offset));
    const int index = static_cast<int>(symbols.size());
    symbols.push_back(SpmSymbol{index - 1, index + 1, offset, len});
    offset += len;
  }
  symbols.back().next = -1;

  std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t size = symbols[left].size + symbols[right].size;
    const int32_t id = Lookup(norm.substr(symbols[left].offset, size));
    if (id < 0) return;
    queue.push(Bigram{left, right, vocab_.scores[id], size});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram bigram = queue.top();
    queue.pop();
    SpmSymbol& left = symbols[bigram.left];
    SpmSymbol& right = symbols[bigram.right];
    // Skip pairs invalidated by an earlier merge of either side.
    if (left.size == 0 || right.size == 0 || left.size + right.size != bigram.size) {
      continue;
    }
    left.size += right.size;
    right.size = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = bigram.left;
    try_add(left.prev, bigram.left);
    try_add(bigram.left, left.next);
  }

  for (int i = 0; i >= 0; i = symbols[i].next) {
    EmitSymbol(norm.substr(symbols[i].offset, symbols[i].size), out);
  }
  return out;
}

std::string SpmTokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_.size()) return {};
  const std::string& text = vocab_.tokens[id];
  switch (vocab_.kinds[id]) {
    case TokenKind::kControl:
      return {};
    case TokenKind::kByte: {
      const int byte = ParseByteToken(text);
      if (byte >= 0) return std::string(1, static_cast<char>(byte));
      return text;
    }
    case TokenKind::kUnknown:
      // llama.cpp renders the unknown token as U+2585 "▅".
      return "\xe2\x96\x85";
    default:
      break;
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (std::string_view(text).substr(i, kSpaceMarker.size()) == kSpaceMarker) {
      out += ' ';
      i += kSpaceMarker.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

bool SpmTokenizer::StartsWithSpacePrefix(int32_t id) const {
  if (id < 0 || id >= vocab_.size()) return false;
  const TokenKind kind = vocab_.kinds[id];
  if (kind == TokenKind::kControl || kind == TokenKind::kByte ||
      kind == TokenKind::kUnknown) {
    return false;
  }
  return std::string_view(vocab_.tokens[id]).starts_with(kSpaceMarker);
}

}  // namespace swiftlet
