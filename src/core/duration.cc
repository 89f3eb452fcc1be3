#include "core/duration.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <string>

#include "core/str_cat.h"

namespace swiftlet {

absl::StatusOr<int64_t> ParseDuration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("duration '", text, "': ", why));
  };
  size_t unit = 0;
  while (unit < text.size() && (std::isdigit(static_cast<unsigned char>(text[unit])) || text[unit] == '.')) ++unit;
  if (unit == 0) return bad("expected a number and a unit, such as 500ms or 2s");
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + unit, value);
  if (ec != std::errc() || end != text.data() + unit) return bad("not a number");
  const std::string_view suffix = text.substr(unit);
  double scale = 0;
  if (suffix == "ns") scale = 1;
  else if (suffix == "us") scale = 1e3;
  else if (suffix == "ms") scale = 1e6;
  else if (suffix == "s") scale = 1e9;
  else if (suffix == "m") scale = 60e9;
  else return bad("unit must be ns, us, ms, s or m");
  const double ns = value * scale;
  if (!(ns >= 1) || ns > 24 * 3600e9) return bad("must be between 1ns and 24h");
  return static_cast<int64_t>(std::llround(ns));
}

absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> ParseDurationList(
    std::string_view text, const std::vector<std::string_view>& allowed) {
  std::vector<std::pair<std::string, int64_t>> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("'", item, "': expected key=duration"));
    }
    const std::string key(item.substr(0, eq));
    bool known = false;
    for (std::string_view a : allowed) known = known || a == key;
    if (!known) return absl::InvalidArgumentError(StrCat("'", key, "': unknown key"));
    for (const auto& [k, v] : out) {
      if (k == key) return absl::InvalidArgumentError(StrCat("'", key, "' given twice"));
    }
    SWIFTLET_ASSIGN_OR_RETURN(const int64_t ns, ParseDuration(item.substr(eq + 1)));
    out.emplace_back(key, ns);
  }
  return out;
}

}  // namespace swiftlet
