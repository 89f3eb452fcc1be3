#include "text/bpe_tokenizer.h"

#include <cstdint>
#include <algorithm>
#include <queue>
#include <utility>

#include "core/str_cat.h"
#include "gguf/gguf_file.h"

namespace swiftlet {
namespace {

constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";

bool SpellsItself(int b) {
  return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
}

struct ByteAlphabet {
  std::array<char32_t, 256> to_cp;
  std::array<std::string, 256> to_utf8;
  std::array<int16_t, 256 + 68> to_byte;  // Indexed by code point.
  ByteAlphabet() {
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      to_cp[b] = SpellsItself(b) ? static_cast<char32_t>(b) : next++;
      const char32_t cp = to_cp[b];
      to_byte[cp] = static_cast<int16_t>(b);
      // All of these are below U+0800: one or two UTF-8 bytes.
      if (cp < 0x80) {
        to_utf8[b] = std::string(1, static_cast<char>(cp));
      } else {
        to_utf8[b] = {static_cast<char>(0xc0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3f))};
      }
    }
  }
};

const ByteAlphabet& Alphabet() {
  static const ByteAlphabet* alphabet = new ByteAlphabet();
  return *alphabet;
}

// One symbol of a word being merged: a doubly linked list over a vector.
struct Symbol {
  int prev;
  int next;
  int32_t id;  // -1 once merged into the symbol on its left.
};

struct Candidate {
  int32_t rank;
  int left;
  int right;
  int32_t left_id;  // Ids when queued; stale if either side changed since.
  int32_t right_id;
  int32_t result;
};

struct CandidateOrder {
  // Lowest rank first; on ties the leftmost pair.
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

uint64_t PairKey(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
         static_cast<uint32_t>(right);
}

}  // namespace

char32_t BpeByteToCodePoint(uint8_t b) { return Alphabet().to_cp[b]; }

int BpeCodePointToByte(char32_t cp) {
  if (cp < 256 && !SpellsItself(static_cast<int>(cp))) return -1;
  return cp < 256 + 68 ? Alphabet().to_byte[cp] : -1;
}

absl::StatusOr<std::unique_ptr<Tokenizer>> BpeTokenizer::FromGguf(const GgufFile& file) {
  SWIFTLET_ASSIGN_OR_RETURN(Vocab vocab, ReadVocab(file, /*default_bos=*/-1,
                                                   /*default_eos=*/-1,
                                                   /*default_unknown=*/-1));
  if (file.Find("tokenizer.ggml.add_bos_token") == nullptr) vocab.add_bos = false;
  // Byte-level BPE spells spaces in its alphabet; there is no prefix to strip.
  vocab.add_space_prefix = false;

  if (file.Find(kMergesKey) == nullptr) {
    return absl::InvalidArgumentError(StrCat(kMergesKey, " is missing"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(const GgufValue* merges, file.GetArray(kMergesKey));
  if (merges->array_type() != GgufType::kString) {
    return absl::InvalidArgumentError(StrCat(kMergesKey, " must be an array of strings, not of ",
                                             GgufTypeName(merges->array_type())));
  }
  for (size_t i = 0; i < merges->strings().size(); ++i) {
    const std::string& merge = merges->strings()[i];
    const size_t space = merge.find(' ', 1);
    if (space == std::string::npos || space + 1 >= merge.size()) {
      return absl::InvalidArgumentError(
          StrCat(kMergesKey, "[", i, "] = '", merge, "' is not of the form 'left right'"));
    }
  }

  std::string pre_name;
  if (file.Find(kPreKey) != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(pre_name, file.GetString(kPreKey));
  }
  SWIFTLET_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::FromName(pre_name));
  return std::unique_ptr<Tokenizer>(
      new BpeTokenizer(std::move(vocab), merges->strings(), pre));
}

BpeTokenizer::BpeTokenizer(Vocab vocab, const std::vector<std::string>& merges,
                           PreTokenizer pre)
    : Tokenizer(std::move(vocab)), pre_(pre) {
  text_to_id_.reserve(vocab_.tokens.size());
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    // Control tokens never come from text; user-defined ones only through
    // the partition in Encode (their stored text is plain, not byte-spelled).
    const TokenKind kind = vocab_.kinds[id];
    if (kind == TokenKind::kControl || kind == TokenKind::kUserDefined) continue;
    // First id wins for duplicated text.
    text_to_id_.emplace(std::string_view(vocab_.tokens[id]), id);
  }
  for (int b = 0; b < 256; ++b) byte_to_id_[b] = Lookup(Alphabet().to_utf8[b]);
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    if (vocab_.kinds[id] != TokenKind::kUserDefined || vocab_.tokens[id].empty()) continue;
    user_by_first_byte_[static_cast<unsigned char>(vocab_.tokens[id][0])].push_back(id);
    has_user_tokens_ = true;
  }
  for (std::vector<int32_t>& ids : user_by_first_byte_) {
    std::stable_sort(ids.begin(), ids.end(), [&](int32_t a, int32_t b) {
      return vocab_.tokens[a].size() > vocab_.tokens[b].size();
    });
  }

  merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string_view merge = merges[rank];
    const size_t space = merge.find(' ', 1);
    if (space == std::string_view::npos) continue;
    const std::string_view left = merge.substr(0, space);
    const std::string_view right = merge.substr(space + 1);
    joined.assign(left);
    joined.append(right);
    const int32_t left_id = Lookup(left);
    const int32_t right_id = Lookup(right);
    const int32_t result = Lookup(joined);
    if (left_id < 0 || right_id < 0 || result < 0) continue;
    merges_.emplace(PairKey(left_id, right_id), Merge{static_cast<int32_t>(rank), result});
  }
}

bool BpeTokenizer::has_all_bytes() const {
  return std::all_of(byte_to_id_.begin(), byte_to_id_.end(), [](int32_t id) { return id >= 0; });
}

int32_t BpeTokenizer::Lookup(std::string_view text) const {
  auto it = text_to_id_.find(text);
  return it == text_to_id_.end() ? -1 : it->second;
}

void BpeTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>& out) const {
  if (pre_.ignore_merges()) {
    std::string spelled;
    spelled.reserve(word.size() * 2);
    for (char c : word) spelled += Alphabet().to_utf8[static_cast<unsigned char>(c)];
    if (int32_t id = Lookup(spelled); id >= 0) {
      out.push_back(id);
      return;
    }
  }

  if (word.empty()) return;
  std::vector<Symbol> symbols(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const int index = static_cast<int>(i);
    symbols[i] = Symbol{index - 1, index + 1, byte_to_id_[static_cast<unsigned char>(word[i])]};
  }
  symbols.back().next = -1;

  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  auto try_add = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t left_id = symbols[left].id;
    const int32_t right_id = symbols[right].id;
    if (left_id < 0 || right_id < 0) return;
    auto it = merges_.find(PairKey(left_id, right_id));
    if (it == merges_.end()) return;
    queue.push(Candidate{it->second.rank, left, right, left_id, right_id, it->second.result});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    // Skip pairs that an earlier merge of either side invalidated.
    if (left.next != c.right || left.id != c.left_id || right.id != c.right_id) continue;
    left.id = c.result;
    left.next = right.next;
    right.id = -1;
    right.prev = -1;
    right.next = -1;
    if (left.next >= 0) symbols[left.next].prev = c.left;
    try_add(left.prev, c.left);
    try_add(c.left, left.next);
  }

  for (int i = 0; i >= 0; i = symbols[i].next) {
    if (symbols[i].id >= 0) {
      out.push_back(symbols[i].id);
    } else if (vocab_.unknown_id >= 0) {
      // A byte the vocabulary cannot spell.
      out.push_back(vocab_.unknown_id);
    }
  }
}

void BpeTokenizer::EncodePlain(std::string_view text, std::vector<int32_t>& out) const {
  for (std::string_view word : pre_.Split(text)) EncodeWord(word, out);
}

std::vector<int32_t> BpeTokenizer::Encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  if (!has_user_tokens_) {
    EncodePlain(text, out);
    return out;
  }
  size_t plain = 0;
  for (size_t pos = 0; pos < text.size();) {
    int32_t found = -1;
    for (int32_t id : user_by_first_byte_[static_cast<unsigned char>(text[pos])]) {
      if (text.substr(pos).starts_with(vocab_.tokens[id])) {
        found = id;
        break;
      }
    }
    if (found < 0) {
      ++pos;
      continue;
    }
    EncodePlain(text.substr(plain, pos - plain), out);
    out.push_back(found);
    pos += vocab_.tokens[found].size();
    plain = pos;
  }
  EncodePlain(text.substr(plain), out);
  return out;
}

std::string BpeTokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_.size()) return {};
  const std::string& text = vocab_.tokens[id];
  switch (vocab_.kinds[id]) {
    case TokenKind::kControl:
      return {};
    case TokenKind::kUserDefined:
      // Added tokens are stored as their plain text.
      return text;
    default:
      break;
  }
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto b0 = static_cast<unsigned char>(text[i]);
    int byte = -1;
    size_t len = 1;
    if (b0 < 0x80) {
      byte = BpeCodePointToByte(b0);
    } else if ((b0 & 0xe0) == 0xc0 && i + 1 < text.size() &&
               (static_cast<unsigned char>(text[i + 1]) & 0xc0) == 0x80) {
      len = 2;
      byte = BpeCodePointToByte(((b0 & 0x1f) << 6) |
                                (static_cast<unsigned char>(text[i + 1]) & 0x3f));
    }
    if (byte >= 0) {
      out += static_cast<char>(byte);
    } else {
      // Not in the byte alphabet: keep the stored bytes.
      out.append(text, i, len);
    }
    i += len;
  }
  return out;
}

}  // namespace swiftlet
