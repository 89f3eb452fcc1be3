// StrCat: concatenates strings, string views, characters and numbers.
//
// Debian's Abseil is built with its own absl::string_view, so StrCat
// does not accept std::string_view; this is the project's replacement.
// Floating-point values print in their shortest round-trip form.
#pragma once

#include <charconv>
#include <concepts>
#include <string>
#include <string_view>
#include <type_traits>

#include "absl/strings/string_view.h"

namespace swiftlet {
namespace internal {

inline void AppendPiece(std::string& out, std::string_view s) { out.append(s); }
inline void AppendPiece(std::string& out, const char* s) { out.append(s); }
inline void AppendPiece(std::string& out, const std::string& s) { out.append(s); }
#if !defined(ABSL_USES_STD_STRING_VIEW)
inline void AppendPiece(std::string& out, absl::string_view s) { out.append(s.data(), s.size()); }
#endif
inline void AppendPiece(std::string& out, char c) { out.push_back(c); }

template <typename T>
  requires(std::is_arithmetic_v<T> && !std::same_as<T, char> &&
           !std::same_as<T, bool>)
void AppendPiece(std::string& out, T value) {
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof(buf), value);
  out.append(buf, result.ptr);
}

inline void AppendPiece(std::string& out, bool b) { out.append(b ? "true" : "false"); }

}  // namespace internal

template <typename... Args>
std::string StrCat(const Args&... args) {
  std::string out;
  (internal::AppendPiece(out, args), ...);
  return out;
}

}  // namespace swiftlet
