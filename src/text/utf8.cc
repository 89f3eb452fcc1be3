#include "text/utf8.h"

#include <utf8proc.h>

namespace swiftlet {

size_t NextUtf8(std::string_view s, char32_t* cp) {
  if (s.empty()) return 0;
  utf8proc_int32_t c = 0;
  const utf8proc_ssize_t n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                              static_cast<utf8proc_ssize_t>(s.size()), &c);
  if (n <= 0) return 0;
  if (cp != nullptr) *cp = static_cast<char32_t>(c);
  return static_cast<size_t>(n);
}

bool IsValidUtf8(std::string_view s) {
  while (!s.empty()) {
    const size_t n = NextUtf8(s);
    if (n == 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

int64_t CountUtf8Chars(std::string_view s) {
  int64_t chars = 0;
  while (!s.empty()) {
    const size_t n = NextUtf8(s);
    s.remove_prefix(n == 0 ? 1 : n);
    ++chars;
  }
  return chars;
}

}  // namespace swiftlet
