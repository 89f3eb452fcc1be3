#include "text/detokenizer.h"

#include <span>

#include "text/utf8.h"

namespace swiftlet {

void Utf8Sanitizer::Reset() {
  held_.clear();
  needed_ = 0;
  lower_ = 0x80;
  upper_ = 0xbf;
}

// The WHATWG UTF-8 decoder, emitting bytes instead of code points.
void Utf8Sanitizer::Append(std::string_view bytes, std::string& out) {
  for (size_t i = 0; i < bytes.size();) {
    const auto b = static_cast<uint8_t>(bytes[i]);
    if (needed_ == 0) {
      ++i;
      if (b < 0x80) {
        out += static_cast<char>(b);
      } else if (b >= 0xc2 && b <= 0xdf) {
        needed_ = 1;
        held_ += static_cast<char>(b);
      } else if (b >= 0xe0 && b <= 0xef) {
        if (b == 0xe0) lower_ = 0xa0;  // No overlong forms.
        if (b == 0xed) upper_ = 0x9f;  // No surrogates.
        needed_ = 2;
        held_ += static_cast<char>(b);
      } else if (b >= 0xf0 && b <= 0xf4) {
        if (b == 0xf0) lower_ = 0x90;  // No overlong forms.
        if (b == 0xf4) upper_ = 0x8f;  // Nothing past U+10FFFF.
        needed_ = 3;
        held_ += static_cast<char>(b);
      } else {
        out += kReplacementUtf8;
      }
      continue;
    }
    if (b < lower_ || b > upper_) {
      // The held bytes are one ill-formed subpart; `b` starts afresh, so it
      // is looked at again without advancing.
      Reset();
      out += kReplacementUtf8;
      continue;
    }
    ++i;
    lower_ = 0x80;
    upper_ = 0xbf;
    held_ += static_cast<char>(b);
    if (--needed_ == 0) {
      out += held_;
      held_.clear();
    }
  }
}

void Utf8Sanitizer::Finish(std::string& out) {
  if (needed_ != 0) out += kReplacementUtf8;
  Reset();
}

std::string SanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  Utf8Sanitizer sanitizer;
  sanitizer.Append(bytes, out);
  sanitizer.Finish(out);
  return out;
}

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer,
                                               bool strip_leading_space)
    : tokenizer_(tokenizer), strip_pending_(strip_leading_space) {}

std::string IncrementalDetokenizer::Push(int32_t id) {
  std::string piece = tokenizer_.TokenBytes(id);
  if (piece.empty()) return {};
  if (strip_pending_) {
    // Decode of the single id applies the same rule Decode applies to the
    // first token with bytes, whatever the model's space marker is.
    piece = tokenizer_.Decode(std::span<const int32_t>(&id, 1), /*strip_leading_space=*/true);
    strip_pending_ = false;
  }
  std::string out;
  utf8_.Append(piece, out);
  return out;
}

std::string IncrementalDetokenizer::Flush() {
  std::string out;
  utf8_.Finish(out);
  return out;
}

}  // namespace swiftlet
