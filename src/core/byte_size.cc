#include "core/byte_size.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "core/str_cat.h"

namespace swiftlet {

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("size '", text, "': ", why));
  };
  size_t unit = 0;
  while (unit < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[unit])) != 0 || text[unit] == '.')) {
    ++unit;
  }
  if (unit == 0) return bad("expected a number and a unit, such as 512MiB or 2GiB");
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + unit, value);
  if (ec != std::errc() || end != text.data() + unit) return bad("not a number");
  const std::string_view suffix = text.substr(unit);
  double scale = 0;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "KiB") scale = 1024.0;
  else if (suffix == "MiB") scale = 1024.0 * 1024;
  else if (suffix == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (suffix == "KB") scale = 1e3;
  else if (suffix == "MB") scale = 1e6;
  else if (suffix == "GB") scale = 1e9;
  else if (suffix == "TB") scale = 1e12;
  else return bad("unit must be B, KiB, MiB, GiB, TiB, KB, MB, GB or TB");
  const double bytes = value * scale;
  if (!(bytes >= 0) || bytes > std::ldexp(1.0, 50)) return bad("must be between 0 and 1 PiB");
  if (scale == 1 && bytes != std::floor(bytes)) return bad("a byte count must be whole");
  return static_cast<uint64_t>(std::llround(bytes));
}

}  // namespace swiftlet
