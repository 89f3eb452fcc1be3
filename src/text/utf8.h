// UTF-8 as Unicode defines it (well-formed sequences, table 3-7: no overlong
// forms, no surrogates, nothing past U+10FFFF), decoded by utf8proc. Every
// tokenizer, the pre-tokenizer, the stop-string check and the server's
// character counts go through here. The detokenizer's streaming sanitizer
// (text/detokenizer.h) keeps its own state machine, because it must replace
// each maximal ill-formed subpart across chunk boundaries, which utf8proc
// does not offer; its tests hold it to IsValidUtf8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace swiftlet {

// U+FFFD, which stands in for what is not well-formed: as a code point and
// as its UTF-8 bytes.
inline constexpr char32_t kReplacementChar = 0xfffd;
inline constexpr std::string_view kReplacementUtf8 = "\xef\xbf\xbd";

// U+2581 "▁", the word-start marker of SentencePiece-style vocabularies.
inline constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";

// The length (1..4) of the well-formed character at the start of `s`, with
// its code point in `*cp` (when not null); 0 when `s` is empty or does not
// start with one.
size_t NextUtf8(std::string_view s, char32_t* cp = nullptr);

// Whether all of `s` is well-formed UTF-8.
bool IsValidUtf8(std::string_view s);

// Characters in well-formed `s` (ill-formed bytes count one each).
int64_t CountUtf8Chars(std::string_view s);

}  // namespace swiftlet
