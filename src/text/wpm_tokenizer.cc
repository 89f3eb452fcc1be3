#include "text/wpm_tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/str_cat.h"
#include "gguf/gguf_file.h"
#include "text/utf8.h"

namespace swiftlet {
namespace {

// Hugging Face's WordPiece max_input_chars_per_word.
constexpr size_t kMaxWordChars = 100;

// Decodes UTF-8; each byte that does not belong to a valid character becomes
// U+FFFD, which basic tokenization then drops.
std::vector<char32_t> DecodeUtf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  while (!s.empty()) {
    char32_t cp = kReplacementChar;
    const size_t n = NextUtf8(s, &cp);
    out.push_back(n == 0 ? kReplacementChar : cp);
    s.remove_prefix(n == 0 ? 1 : n);
  }
  return out;
}

void AppendUtf8(char32_t cp, std::string& out) {
  uint8_t buf[4];
  const utf8proc_ssize_t n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<size_t>(n));
}

// NFD of valid code points (canonical decomposition and reordering).
std::vector<char32_t> Nfd(const std::vector<char32_t>& cps) {
  std::string utf8;
  utf8.reserve(cps.size() * 2);
  for (char32_t cp : cps) AppendUtf8(cp, utf8);
  std::vector<utf8proc_int32_t> buf(utf8.size() + 16);
  for (;;) {
    const utf8proc_ssize_t n = utf8proc_decompose(
        reinterpret_cast<const utf8proc_uint8_t*>(utf8.data()),
        static_cast<utf8proc_ssize_t>(utf8.size()), buf.data(),
        static_cast<utf8proc_ssize_t>(buf.size()), UTF8PROC_DECOMPOSE);
    if (n < 0) return cps;  // Cannot happen for valid input; keep the text.
    if (static_cast<size_t>(n) <= buf.size()) {
      return std::vector<char32_t>(buf.begin(), buf.begin() + n);
    }
    buf.resize(static_cast<size_t>(n));
  }
}

bool IsControl(char32_t cp) {
  if (cp == '\t' || cp == '\n' || cp == '\r') return false;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CN:
      return true;
    default:
      return false;
  }
}

bool IsWhitespace(char32_t cp) {
  if (cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return true;
    default:
      return false;
  }
}

bool IsPunctuation(char32_t cp) {
  // BERT counts every non-alphanumeric printable ASCII character ("$", "+",
  // "^", "`") as punctuation, though Unicode puts some of them in S*.
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
      (cp >= 123 && cp <= 126)) {
    return true;
  }
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return true;
    default:
      return false;
  }
}

// The CJK Unified Ideographs blocks BERT treats as words of their own.
bool IsCjkIdeograph(char32_t cp) {
  return (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
         (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
         (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b820 && cp <= 0x2ceaf) ||
         (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f);
}

// Bracketed names such as "[unused0]" or "[CLS]" say nothing about casing.
bool HasAsciiCapital(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') return false;
  return std::any_of(text.begin(), text.end(), [](char c) { return c >= 'A' && c <= 'Z'; });
}

// An optional id key: `fallback` when absent, -1 when present but unusable.
int32_t ReadOptionalId(const GgufFile& file, std::string_view key, int32_t fallback,
                       int32_t n_vocab) {
  int64_t id = fallback;
  if (file.Find(key) != nullptr) {
    absl::StatusOr<int64_t> value = file.GetInt(key);
    id = value.ok() ? *value : -1;
  }
  return id >= 0 && id < n_vocab ? static_cast<int32_t>(id) : -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> WpmTokenizer::FromGguf(const GgufFile& file) {
  // The vocabulary size is not known before ReadVocab; an out-of-range
  // default is dropped to -1 there, a present key is validated there.
  int32_t default_bos = 101;
  if (file.Find("tokenizer.ggml.cls_token_id") != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(int64_t cls, file.GetInt("tokenizer.ggml.cls_token_id"));
    default_bos = cls >= 0 && cls <= INT32_MAX ? static_cast<int32_t>(cls) : -1;
  }
  SWIFTLET_ASSIGN_OR_RETURN(Vocab vocab, ReadVocab(file, default_bos,
                                                   /*default_eos=*/-1,
                                                   /*default_unknown=*/100));
  // Word-start pieces carry the marker, so Decode drops the first one.
  vocab.add_space_prefix = true;
  const int32_t sep = ReadOptionalId(file, "tokenizer.ggml.seperator_token_id", 102,
                                     vocab.size());
  return std::unique_ptr<Tokenizer>(new WpmTokenizer(std::move(vocab), sep));
}

WpmTokenizer::WpmTokenizer(Vocab vocab, int32_t sep_id)
    : Tokenizer(std::move(vocab)), sep_id_(sep_id) {
  text_to_id_.reserve(vocab_.tokens.size());
  for (int32_t id = 0; id < vocab_.size(); ++id) {
    const std::string& text = vocab_.tokens[id];
    const TokenKind kind = vocab_.kinds[id];
    if (kind == TokenKind::kControl || kind == TokenKind::kByte ||
        kind == TokenKind::kUnknown || text.empty()) {
      continue;
    }
    if (kind == TokenKind::kNormal && HasAsciiCapital(text)) uncased_ = false;
    text_to_id_.emplace(std::string_view(text), id);  // First id wins.
    max_token_size_ = std::max(max_token_size_, text.size());
  }
}

std::vector<std::string> WpmTokenizer::SplitWords(std::string_view text) const {
  std::vector<char32_t> cps;
  for (char32_t cp : DecodeUtf8(text)) {
    if (cp == 0 || cp == kReplacementChar || IsControl(cp)) continue;
    cps.push_back(cp);
  }
  if (uncased_) cps = Nfd(cps);

  std::vector<std::string> words(1);
  auto finish_word = [&words] {
    if (!words.back().empty()) words.emplace_back();
  };
  for (char32_t cp : cps) {
    if (IsWhitespace(cp)) {
      finish_word();
      continue;
    }
    if (uncased_) {
      if (utf8proc_category(static_cast<utf8proc_int32_t>(cp)) == UTF8PROC_CATEGORY_MN) {
        continue;
      }
      cp = static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
    }
    if (IsPunctuation(cp) || IsCjkIdeograph(cp)) {
      finish_word();
      AppendUtf8(cp, words.back());
      words.emplace_back();
    } else {
      AppendUtf8(cp, words.back());
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

int32_t WpmTokenizer::Lookup(std::string_view text) const {
  auto it = text_to_id_.find(text);
  return it == text_to_id_.end() ? -1 : it->second;
}

void WpmTokenizer::EncodeWord(std::string_view word, std::vector<int32_t>& out) const {
  // Offsets of the character boundaries (the word is valid UTF-8 here).
  std::vector<size_t> bounds;
  for (size_t i = 0; i < word.size(); ++i) {
    if ((static_cast<unsigned char>(word[i]) & 0xc0) != 0x80) bounds.push_back(i);
  }
  bounds.push_back(word.size());
  const size_t n_chars = bounds.size() - 1;
  const size_t first = out.size();
  bool ok = n_chars <= kMaxWordChars;
  std::string candidate;
  for (size_t start = 0; ok && start < n_chars;) {
    int32_t found = -1;
    size_t end = n_chars;
    for (; end > start; --end) {
      const size_t size = bounds[end] - bounds[start];
      // Skip lengths no piece can have (the marker adds to word starts).
      if (size > max_token_size_) continue;
      const std::string_view piece = word.substr(bounds[start], size);
      if (start == 0) {
        candidate.assign(kSpaceMarker);
        candidate.append(piece);
        found = Lookup(candidate);
      } else {
        found = Lookup(piece);
      }
      if (found >= 0) break;
    }
    if (found < 0) {
      ok = false;
      break;
    }
    out.push_back(found);
    start = end;
  }
  if (!ok) {
    out.resize(first);
    if (vocab_.unknown_id >= 0) out.push_back(vocab_.unknown_id);
  }
}

std::vector<int32_t> WpmTokenizer::Encode(std::string_view text, bool add_bos) const {
  std::vector<int32_t> out;
  if (add_bos && vocab_.bos_id >= 0) out.push_back(vocab_.bos_id);
  for (const std::string& word : SplitWords(text)) EncodeWord(word, out);
  return out;
}

std::string WpmTokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= vocab_.size()) return {};
  if (vocab_.kinds[id] == TokenKind::kControl) return {};
  std::string_view text = vocab_.tokens[id];
  if (text.starts_with(kSpaceMarker)) {
    return StrCat(" ", text.substr(kSpaceMarker.size()));
  }
  return std::string(text);
}

bool WpmTokenizer::StartsWithSpacePrefix(int32_t id) const {
  if (id < 0 || id >= vocab_.size()) return false;
  if (vocab_.kinds[id] == TokenKind::kControl) return false;
  return std::string_view(vocab_.tokens[id]).starts_with(kSpaceMarker);
}

}  // namespace swiftlet
