#include "translate/protected_spans.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>

#include "core/str_cat.h"
#include "text/utf8.h"

namespace swiftlet::translate {
namespace {

constexpr std::string_view kOpen = "\u27e6";   // ⟦
constexpr std::string_view kClose = "\u27e7";  // ⟧

bool IsAsciiWord(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool IsLetterOrDigit(char32_t c) {
  if (c < 0x80) return IsAsciiWord(c);
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ND:
      return true;
    default:
      return false;
  }
}

// Pictographs, symbols and the joiners that make one emoji of several.
bool IsEmojiPart(char32_t c) {
  return (c >= 0x1F000 && c <= 0x1FAFF) || (c >= 0x2600 && c <= 0x27BF) || (c >= 0x2B00 && c <= 0x2BFF) ||
         (c >= 0x2190 && c <= 0x21FF) || (c >= 0x2300 && c <= 0x23FF) || c == 0x200D || c == 0xFE0F ||
         c == 0x20E3 || c == 0x00A9 || c == 0x00AE || c == 0x203C || c == 0x2049 || c == 0x2122 ||
         (c >= 0xE0020 && c <= 0xE007F);
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The character at `s[i]` (one byte for ill-formed input).
size_t CharAt(std::string_view s, size_t i, char32_t* cp) {
  const size_t n = NextUtf8(s.substr(i), cp);
  if (n == 0) {
    *cp = 0xFFFD;
    return 1;
  }
  return n;
}

// Length of the span of a pattern starting at `i`, or 0.
size_t PatternAt(std::string_view s, size_t i) {
  auto starts = [&](std::string_view p) { return s.substr(i, p.size()) == p; };
  if (starts(kOpen) || starts(kClose)) return starts(kOpen) ? kOpen.size() : kClose.size();
  // URLs run to the next whitespace.
  if (starts("http://") || starts("https://") || starts("www.")) {
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    // Trailing sentence punctuation is not part of the address.
    while (j > i && std::string_view(".,!?;:)").find(s[j - 1]) != std::string_view::npos) --j;
    return j - i;
  }
  char32_t cp = 0;
  // @handle and #tag: the sign and a run of letters, digits, _ and inner dots.
  if (s[i] == '@' || s[i] == '#') {
    size_t j = i + 1;
    while (j < s.size()) {
      const size_t n = CharAt(s, j, &cp);
      const bool inner_dot = cp == '.' && j + 1 < s.size() && j > i + 1;
      if (!IsLetterOrDigit(cp) && !inner_dot) break;
      j += n;
    }
    while (j > i + 1 && s[j - 1] == '.') --j;
    return j > i + 1 ? j - i : 0;
  }
  // Numbers: digits with inner separators (1,000.50 12:30 2024/12/05), not
  // inside a word.
  if (IsDigit(s[i])) {
    if (i > 0 && IsAsciiWord(static_cast<unsigned char>(s[i - 1]))) return 0;
    size_t j = i;
    while (j < s.size() && (IsDigit(s[j]) || (std::string_view(".,:/").find(s[j]) != std::string_view::npos &&
                                              j + 1 < s.size() && IsDigit(s[j + 1])))) {
      ++j;
    }
    return j - i;
  }
  // Emoji sequences (with joiners, variation selectors, skin tones, flags).
  size_t j = i;
  while (j < s.size()) {
    const size_t n = CharAt(s, j, &cp);
    if (!IsEmojiPart(cp)) break;
    j += n;
  }
  // A lone joiner or selector is not an emoji.
  if (j > i) {
    CharAt(s, i, &cp);
    if (cp == 0x200D || cp == 0xFE0F) return 0;
  }
  return j - i;
}

}  // namespace

std::string Placeholder(size_t n) { return StrCat(kOpen, n, kClose); }

Masked Protect(std::string_view text, const std::vector<std::string>& keep) {
  std::vector<std::string> terms;
  for (const std::string& k : keep) {
    if (!k.empty()) terms.push_back(k);
  }
  std::sort(terms.begin(), terms.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() > b.size() : a < b;
  });
  Masked out;
  size_t i = 0;
  while (i < text.size()) {
    size_t len = 0;
    for (const std::string& t : terms) {
      if (text.substr(i, t.size()) == t) {
        len = t.size();
        break;
      }
    }
    if (len == 0) len = PatternAt(text, i);
    if (len > 0) {
      out.spans.emplace_back(text.substr(i, len));
      out.text += Placeholder(out.spans.size());
      i += len;
      continue;
    }
    char32_t cp = 0;
    const size_t n = CharAt(text, i, &cp);
    out.text.append(text.substr(i, n));
    i += n;
  }
  return out;
}

Restored Restore(std::string_view output, const std::vector<std::string>& spans) {
  Restored r;
  std::vector<int> seen(spans.size(), 0);
  size_t i = 0;
  while (i < output.size()) {
    if (output.substr(i, kOpen.size()) == kOpen) {
      size_t j = i + kOpen.size();
      size_t n = 0;
      while (j < output.size() && IsDigit(output[j]) && n < 1'000'000) n = n * 10 + static_cast<size_t>(output[j++] - '0');
      if (j > i + kOpen.size() && output.substr(j, kClose.size()) == kClose && n >= 1 && n <= spans.size()) {
        r.text += spans[n - 1];
        seen[n - 1] += 1;
        i = j + kClose.size();
        continue;
      }
      r.ok = false;  // A bracket that is not one of ours: the model made it up.
    }
    r.text += output[i++];
  }
  for (int count : seen) r.ok = r.ok && count == 1;
  return r;
}

bool MapTermsHonoured(std::string_view source, std::string_view output,
                      const std::vector<std::pair<std::string, std::string>>& map) {
  for (const auto& [term, translation] : map) {
    if (source.find(term) != std::string_view::npos && output.find(translation) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

}  // namespace swiftlet::translate
