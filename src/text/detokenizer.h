// Streaming token ids -> text for generation output.
//
// IncrementalDetokenizer turns ids into text one at a time and hands out only
// complete, valid UTF-8, holding back the bytes of a character that byte
// tokens ("<0xE4>" "<0xBD>" "<0xA0>") have only begun. The concatenation of
// everything Push() and Flush() return equals SanitizeUtf8(Decode(ids)),
// with Decode's leading-space rule: the first token with any bytes loses
// the space its model's space prefix put there, exactly as Decode does.
//
// Invalid bytes become U+FFFD the way the WHATWG Encoding Standard's UTF-8
// decoder (and Python's errors="replace") does: each maximal ill-formed
// subpart is one U+FFFD. A byte that can never start or continue a
// character is replaced as soon as it arrives; an incomplete character at
// the end is replaced only by Flush(). The decoder is streaming, so the
// result does not depend on how the bytes are split into tokens.
//
// Not thread-safe: one instance per output stream. It keeps a reference to
// the Tokenizer, which must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "text/tokenizer.h"

namespace swiftlet {

// The streaming UTF-8 validator both SanitizeUtf8 and IncrementalDetokenizer
// use.
class Utf8Sanitizer {
 public:
  // Appends to `out` the valid UTF-8 (and U+FFFD replacements) that `bytes`
  // complete; holds back a character still being read.
  void Append(std::string_view bytes, std::string& out);
  // Ends the stream: a held incomplete character becomes U+FFFD.
  void Finish(std::string& out);
  // Whether bytes of an incomplete character are being held.
  bool pending() const { return !held_.empty(); }

 private:
  void Reset();

  std::string held_;      // Bytes of the character being read.
  int needed_ = 0;        // Continuation bytes still to come.
  uint8_t lower_ = 0x80;  // Range allowed for the next continuation byte.
  uint8_t upper_ = 0xbf;
};

// `bytes` with every ill-formed subpart replaced by U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);

class IncrementalDetokenizer {
 public:
  // With strip_leading_space false, a leading space is kept (for output that
  // continues text, as Decode(ids, false)).
  explicit IncrementalDetokenizer(const Tokenizer& tokenizer,
                                  bool strip_leading_space = true);

  // The text `id` completes; empty while a character is incomplete and for
  // tokens without bytes (control tokens, ids out of range).
  std::string Push(int32_t id);

  // Ends the stream: an incomplete character still held becomes U+FFFD.
  // Push may be called again afterwards (the leading space stays handled).
  std::string Flush();

 private:
  const Tokenizer& tokenizer_;
  bool strip_pending_;  // No token with bytes seen yet.
  Utf8Sanitizer utf8_;
};

}  // namespace swiftlet
