#include "text/pretokenizer.h"

#include <utf8proc.h>

#include <array>
#include <cstdint>
#include <span>
#include <utility>

#include "core/str_cat.h"
#include "text/utf8.h"

namespace swiftlet {
namespace {

// Character classes the published regexes use, as bits.
enum : uint16_t {
  kLetter = 1 << 0,      // \p{L}
  kNumber = 1 << 1,      // \p{N}
  kSpace = 1 << 2,       // \s: the White_Space property.
  kPunct = 1 << 3,       // \p{P}
  kMark = 1 << 4,        // \p{M}
  kUpperTitle = 1 << 5,  // \p{Lu} \p{Lt}
  kLower = 1 << 6,       // \p{Ll}
  kModOther = 1 << 7,    // \p{Lm} \p{Lo}
};

// Stands for a byte that does not start a valid UTF-8 character.
constexpr char32_t kInvalidByte = 0xffffffff;

uint16_t ClassOf(char32_t cp) {
  if (cp == kInvalidByte) return 0;
  if ((cp >= 0x09 && cp <= 0x0d) || cp == 0x85) return kSpace;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LT:
      return kLetter | kUpperTitle;
    case UTF8PROC_CATEGORY_LL:
      return kLetter | kLower;
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
      return kLetter | kModOther;
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return kMark;
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_NO:
      return kNumber;
    case UTF8PROC_CATEGORY_PC:
    case UTF8PROC_CATEGORY_PD:
    case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE:
    case UTF8PROC_CATEGORY_PI:
    case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return kPunct;
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return kSpace;
    default:
      return 0;
  }
}

// The text as code points, with their classes and byte offsets.
struct Text {
  std::vector<char32_t> cps;
  std::vector<uint16_t> classes;
  std::vector<size_t> offsets;  // cps.size() + 1 entries.

  bool Has(size_t i, uint16_t bits) const { return (classes[i] & bits) != 0; }
  bool Is(size_t i, char32_t cp) const { return cps[i] == cp; }
  bool IsCrLf(size_t i) const { return cps[i] == '\r' || cps[i] == '\n'; }
};

Text Decode(std::string_view s) {
  Text t;
  t.cps.reserve(s.size());
  t.offsets.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    char32_t cp = 0;
    const size_t n = NextUtf8(s.substr(pos), &cp);
    t.offsets.push_back(pos);
    if (n == 0) {
      t.cps.push_back(kInvalidByte);
      pos += 1;
    } else {
      t.cps.push_back(cp);
      pos += n;
    }
  }
  t.offsets.push_back(pos);
  t.classes.resize(t.cps.size());
  for (size_t i = 0; i < t.cps.size(); ++i) t.classes[i] = ClassOf(t.cps[i]);
  return t;
}

// A matcher tries one regex at code point i of the piece [begin, end) and
// returns how many code points it matches (0: no match; no regex here can
// match the empty string).
using Matcher = size_t (*)(const Text& t, size_t begin, size_t i, size_t end);

template <typename Pred>
size_t RunEnd(size_t i, size_t end, Pred pred) {
  while (i < end && pred(i)) ++i;
  return i;
}

char32_t AsciiLower(char32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

// 's|'t|'re|'ve|'m|'ll|'d at i; case-insensitive when asked (the (?i:...)
// and '[sS] forms). `long_s` also lets U+017F match s, as (?i) case folding
// does. Returns the length or 0.
size_t Contraction(const Text& t, size_t i, size_t end, bool fold, bool long_s) {
  if (i + 1 >= end || t.cps[i] != '\'') return 0;
  auto at = [&](size_t k) -> char32_t {
    if (k >= end) return 0;
    const char32_t c = t.cps[k];
    if (long_s && c == 0x17f) return 's';
    return fold ? AsciiLower(c) : c;
  };
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  const char32_t b = at(i + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// \s+(?!\S), then \s+ when `fallback`: a whitespace run, less its last
// character when a non-space follows it (a lone space then matches only \s+).
size_t SpaceRun(const Text& t, size_t i, size_t end, bool fallback) {
  const size_t w = RunEnd(i, end, [&](size_t k) { return t.Has(k, kSpace); });
  if (w == i) return 0;
  if (w == end) return w - i;
  if (w - i >= 2) return w - i - 1;
  return fallback ? 1 : 0;
}

// \s*[\r\n]+: up to and including the last \r or \n of a whitespace run.
size_t SpaceToNewline(const Text& t, size_t i, size_t end) {
  const size_t w = RunEnd(i, end, [&](size_t k) { return t.Has(k, kSpace); });
  for (size_t k = w; k > i; --k) {
    if (t.IsCrLf(k - 1)) return k - i;
  }
  return 0;
}

bool IsOther(const Text& t, size_t k) { return !t.Has(k, kLetter | kNumber | kSpace); }

// ' ?' then a run of `pred`.
template <typename Pred>
size_t SpaceThenRun(const Text& t, size_t i, size_t end, Pred pred) {
  size_t k = i;
  if (t.Is(k, ' ') && k + 1 < end) ++k;
  if (!pred(k)) return 0;
  return RunEnd(k, end, pred) - i;
}

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
size_t MatchGpt2(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  if (size_t n = Contraction(t, i, end, false, false)) return n;
  if (size_t n = SpaceThenRun(t, i, end, [&](size_t k) { return t.Has(k, kLetter); })) return n;
  if (size_t n = SpaceThenRun(t, i, end, [&](size_t k) { return t.Has(k, kNumber); })) return n;
  if (size_t n = SpaceThenRun(t, i, end, [&](size_t k) { return IsOther(t, k); })) return n;
  return SpaceRun(t, i, end, /*fallback=*/true);
}

// The Llama 3 family:
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
template <size_t kMaxDigits>
size_t MatchLlama3(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  if (size_t n = Contraction(t, i, end, true, true)) return n;
  auto letter = [&](size_t k) { return t.Has(k, kLetter); };
  if (letter(i)) return RunEnd(i, end, letter) - i;
  if (!t.Has(i, kNumber) && !t.IsCrLf(i) && i + 1 < end && letter(i + 1)) {
    return RunEnd(i + 1, end, letter) - i;
  }
  if (t.Has(i, kNumber)) {
    size_t k = i;
    while (k < end && k - i < kMaxDigits && t.Has(k, kNumber)) ++k;
    return k - i;
  }
  if (size_t n = SpaceThenRun(t, i, end, [&](size_t k) { return IsOther(t, k); })) {
    return RunEnd(i + n, end, [&](size_t k) { return t.IsCrLf(k); }) - i;
  }
  if (size_t n = SpaceToNewline(t, i, end)) return n;
  return SpaceRun(t, i, end, /*fallback=*/true);
}

// gpt-4o (o200k), where X = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] and
// Y = [\p{Ll}\p{Lm}\p{Lo}\p{M}], C = (?i:'s|'t|'re|'ve|'m|'ll|'d):
// [^\r\n\p{L}\p{N}]?X*Y+C?|[^\r\n\p{L}\p{N}]?X+Y*C?|\p{N}{1,3}|
//  ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
constexpr uint16_t kGpt4oX = kUpperTitle | kModOther | kMark;
constexpr uint16_t kGpt4oY = kLower | kModOther | kMark;

// X*Y+ from s: end index, or 0 when it cannot match. X* gives back
// characters until one that Y accepts follows it.
size_t Gpt4oLowerWord(const Text& t, size_t s, size_t end) {
  const size_t x = RunEnd(s, end, [&](size_t k) { return t.Has(k, kGpt4oX); });
  for (size_t j = x + 1; j-- > s;) {
    if (j < end && t.Has(j, kGpt4oY)) {
      return RunEnd(j, end, [&](size_t k) { return t.Has(k, kGpt4oY); });
    }
  }
  return 0;
}

// X+Y* from s: end index, or 0.
size_t Gpt4oUpperWord(const Text& t, size_t s, size_t end) {
  const size_t x = RunEnd(s, end, [&](size_t k) { return t.Has(k, kGpt4oX); });
  if (x == s) return 0;
  return RunEnd(x, end, [&](size_t k) { return t.Has(k, kGpt4oY); });
}

size_t MatchGpt4o(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  const bool prefix = !t.Has(i, kLetter | kNumber) && !t.IsCrLf(i) && i + 1 < end;
  for (auto word : {&Gpt4oLowerWord, &Gpt4oUpperWord}) {
    size_t e = prefix ? word(t, i + 1, end) : 0;
    if (e == 0) e = word(t, i, end);
    if (e != 0) return e + Contraction(t, e, end, true, true) - i;
  }
  if (t.Has(i, kNumber)) {
    size_t k = i;
    while (k < end && k - i < 3 && t.Has(k, kNumber)) ++k;
    return k - i;
  }
  if (size_t n = SpaceThenRun(t, i, end, [&](size_t k) { return IsOther(t, k); })) {
    return RunEnd(i + n, end, [&](size_t k) { return t.IsCrLf(k) || t.Is(k, '/'); }) - i;
  }
  if (size_t n = SpaceToNewline(t, i, end)) return n;
  return SpaceRun(t, i, end, /*fallback=*/true);
}

// [\p{P}\$\+<=>\^~\|`]+ (falcon) and the same without ` (default).
template <bool kBacktick>
size_t MatchPunctRun(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  auto in = [&](size_t k) {
    const char32_t c = t.cps[k];
    return t.Has(k, kPunct) || c == '$' || c == '+' || c == '<' || c == '=' || c == '>' ||
           c == '^' || c == '~' || c == '|' || (kBacktick && c == '`');
  };
  return RunEnd(i, end, in) - i;
}

size_t MatchThreeAsciiDigits(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  auto digit = [&](size_t k) { return t.cps[k] >= '0' && t.cps[k] <= '9'; };
  return i + 3 <= end && digit(i) && digit(i + 1) && digit(i + 2) ? 3 : 0;
}

size_t MatchOneNumber(const Text& t, size_t /*begin*/, size_t i, size_t /*end*/) {
  return t.Has(i, kNumber) ? 1 : 0;
}

size_t MatchNumberRun(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  return RunEnd(i, end, [&](size_t k) { return t.Has(k, kNumber); }) - i;
}

size_t MatchOneNewline(const Text& t, size_t /*begin*/, size_t i, size_t /*end*/) {
  return t.IsCrLf(i) ? 1 : 0;
}

// \s?<run of pred>
template <typename Pred>
size_t OptionalSpaceThenRun(const Text& t, size_t i, size_t end, Pred pred) {
  size_t k = i;
  if (t.Has(k, kSpace) && k + 1 < end && pred(k + 1)) ++k;
  if (!pred(k)) return 0;
  return RunEnd(k, end, pred) - i;
}

size_t MatchSpaceLetters(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  return OptionalSpaceThenRun(t, i, end, [&](size_t k) { return t.Has(k, kLetter); });
}

size_t MatchSpacePunct(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  return OptionalSpaceThenRun(t, i, end, [&](size_t k) { return t.Has(k, kPunct); });
}

// \s+$. Inside a whitespace run the match at its first character has
// already been tried (and failed, or it would have reached the end), so only
// run starts are scanned: linear, not quadratic, in the run length.
size_t MatchTrailingSpace(const Text& t, size_t begin, size_t i, size_t end) {
  if (i > begin && t.Has(i - 1, kSpace)) return 0;
  const size_t w = RunEnd(i, end, [&](size_t k) { return t.Has(k, kSpace); });
  return w > i && w == end ? w - i : 0;
}

struct CpRange {
  char32_t first;
  char32_t last;
};

bool InRanges(char32_t cp, std::span<const CpRange> ranges) {
  for (const CpRange& r : ranges) {
    if (cp >= r.first && cp <= r.last) return true;
  }
  return false;
}

// The character classes written out in DeepSeek LLM's and DeepSeek Coder's
// regexes (their own ranges, not Unicode categories).
constexpr CpRange kDeepseekLetters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},
    {0x00D8, 0x00F6},   {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},
    {0x0295, 0x02AF},   {0x0370, 0x0373},   {0x0376, 0x0377},   {0x037B, 0x037D},
    {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},   {0x038C, 0x038C},
    {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},
    {0x1C90, 0x1CBA},   {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},
    {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},   {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},
    {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},   {0x1F5B, 0x1F5B},
    {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},
    {0x1FD6, 0x1FDB},   {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},
    {0x2102, 0x2102},   {0x2107, 0x2107},   {0x210A, 0x2113},   {0x2115, 0x2115},
    {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},   {0x2128, 0x2128},
    {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},
    {0x2C7E, 0x2CE4},   {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},
    {0xA680, 0xA69B},   {0xA722, 0xA76F},   {0xA771, 0xA787},   {0xA78B, 0xA78E},
    {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},   {0xFF21, 0xFF3A},
    {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};
// [!-/:-~！-／：-～‘-‟　-。]
constexpr CpRange kDeepseekPunct[] = {
    {0x0021, 0x002F}, {0x003A, 0x007E}, {0xFF01, 0xFF0F},
    {0xFF1A, 0xFF5E}, {0x2018, 0x201F}, {0x3000, 0x3002},
};
// [一-龥ࠀ-一가-퟿]
constexpr CpRange kDeepseekCjk[] = {{0x4E00, 0x9FA5}, {0x0800, 0x4E00}, {0xAC00, 0xD7FF}};

size_t MatchDeepseekLetters(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  return OptionalSpaceThenRun(
      t, i, end, [&](size_t k) { return InRanges(t.cps[k], kDeepseekLetters); });
}

size_t MatchDeepseekPunct(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  return OptionalSpaceThenRun(
      t, i, end, [&](size_t k) { return InRanges(t.cps[k], kDeepseekPunct); });
}

size_t MatchDeepseekCjk(const Text& t, size_t /*begin*/, size_t i, size_t end) {
  return RunEnd(i, end, [&](size_t k) { return InRanges(t.cps[k], kDeepseekCjk); }) - i;
}

constexpr Matcher kDefaultSteps[] = {&MatchPunctRun<false>, &MatchGpt2, &MatchNumberRun,
                                     &MatchThreeAsciiDigits};
constexpr Matcher kGpt2Steps[] = {&MatchGpt2};
constexpr Matcher kLlama3Steps[] = {&MatchLlama3<3>};
constexpr Matcher kQwen2Steps[] = {&MatchLlama3<1>};
constexpr Matcher kGpt4oSteps[] = {&MatchGpt4o};
constexpr Matcher kDeepseekLlmSteps[] = {&MatchOneNewline,    &MatchDeepseekLetters,
                                         &MatchDeepseekPunct, &MatchTrailingSpace,
                                         &MatchDeepseekCjk,   &MatchNumberRun};
constexpr Matcher kDeepseekCoderSteps[] = {&MatchOneNewline, &MatchSpaceLetters,
                                           &MatchSpacePunct, &MatchDeepseekCjk,
                                           &MatchOneNumber};
constexpr Matcher kFalconSteps[] = {&MatchPunctRun<true>, &MatchGpt2, &MatchThreeAsciiDigits};
constexpr Matcher kStarcoderSteps[] = {&MatchOneNumber, &MatchGpt2};

std::span<const Matcher> StepsFor(PreTokenizerKind kind) {
  switch (kind) {
    case PreTokenizerKind::kDefault:
      return kDefaultSteps;
    case PreTokenizerKind::kGpt2:
      return kGpt2Steps;
    case PreTokenizerKind::kLlama3:
      return kLlama3Steps;
    case PreTokenizerKind::kQwen2:
      return kQwen2Steps;
    case PreTokenizerKind::kDeepseekLlm:
      return kDeepseekLlmSteps;
    case PreTokenizerKind::kDeepseekCoder:
      return kDeepseekCoderSteps;
    case PreTokenizerKind::kFalcon:
      return kFalconSteps;
    case PreTokenizerKind::kStarcoder:
      return kStarcoderSteps;
    case PreTokenizerKind::kGpt4o:
      return kGpt4oSteps;
  }
  return kDefaultSteps;
}

struct NamedKind {
  std::string_view name;
  PreTokenizerKind kind;
};

constexpr NamedKind kNames[] = {
    {"default", PreTokenizerKind::kDefault},
    {"gpt2", PreTokenizerKind::kGpt2},
    {"gpt-2", PreTokenizerKind::kGpt2},
    {"mpt", PreTokenizerKind::kGpt2},
    {"olmo", PreTokenizerKind::kGpt2},
    {"jais", PreTokenizerKind::kGpt2},
    {"llama-bpe", PreTokenizerKind::kLlama3},
    {"llama3", PreTokenizerKind::kLlama3},
    {"dbrx", PreTokenizerKind::kLlama3},
    {"smaug-bpe", PreTokenizerKind::kLlama3},
    {"qwen2", PreTokenizerKind::kQwen2},
    {"stablelm2", PreTokenizerKind::kQwen2},
    {"deepseek-llm", PreTokenizerKind::kDeepseekLlm},
    {"deepseek-coder", PreTokenizerKind::kDeepseekCoder},
    {"falcon", PreTokenizerKind::kFalcon},
    {"starcoder", PreTokenizerKind::kStarcoder},
    {"refact", PreTokenizerKind::kStarcoder},
    {"smollm", PreTokenizerKind::kStarcoder},
    {"command-r", PreTokenizerKind::kStarcoder},
    {"codeshell", PreTokenizerKind::kStarcoder},
    {"gpt-4o", PreTokenizerKind::kGpt4o},
};

}  // namespace

absl::StatusOr<PreTokenizer> PreTokenizer::FromName(std::string_view name) {
  if (name.empty()) return PreTokenizer(PreTokenizerKind::kDefault);
  for (const NamedKind& named : kNames) {
    if (named.name == name) return PreTokenizer(named.kind);
  }
  return absl::InvalidArgumentError(StrCat("tokenizer.ggml.pre '", name,
                                           "' is not a supported pre-tokenizer (supported: ",
                                           SupportedNames(), ")"));
}

std::string PreTokenizer::SupportedNames() {
  std::string out;
  for (const NamedKind& named : kNames) {
    if (!out.empty()) out += ", ";
    out += named.name;
  }
  return out;
}

std::vector<std::string_view> PreTokenizer::Split(std::string_view text) const {
  const Text t = Decode(text);
  // Pieces as code point ranges; each step splits every piece further.
  std::vector<std::pair<size_t, size_t>> pieces;
  if (!t.cps.empty()) pieces.emplace_back(0, t.cps.size());
  std::vector<std::pair<size_t, size_t>> next;
  for (Matcher match : StepsFor(kind_)) {
    next.clear();
    for (const auto& [begin, end] : pieces) {
      size_t gap = begin;
      for (size_t i = begin; i < end;) {
        const size_t n = match(t, begin, i, end);
        if (n == 0) {
          ++i;
          continue;
        }
        if (gap < i) next.emplace_back(gap, i);
        next.emplace_back(i, i + n);
        i += n;
        gap = i;
      }
      if (gap < end) next.emplace_back(gap, end);
    }
    pieces.swap(next);
  }
  std::vector<std::string_view> out;
  out.reserve(pieces.size());
  for (const auto& [begin, end] : pieces) {
    out.push_back(text.substr(t.offsets[begin], t.offsets[end] - t.offsets[begin]));
  }
  return out;
}

}  // namespace swiftlet
