#include "core/duration.h"

#include <string>

#include "absl/time/time.h"

#include "core/str_cat.h"

namespace swiftlet {

absl::StatusOr<int64_t> ParseDuration(std::string_view text) {
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(StrCat("duration '", text, "': ", why));
  };
  absl::Duration d;
  if (text.empty() || !absl::ParseDuration(absl::string_view(text.data(), text.size()), &d) ||
      d == absl::InfiniteDuration() || d == -absl::InfiniteDuration()) {
    return bad("expected a number and a unit (ns, us, ms, s, m, h), such as 500ms, 2s or 1m30s");
  }
  if (d < absl::Nanoseconds(1) || d > absl::Hours(24)) return bad("must be between 1ns and 24h");
  return absl::ToInt64Nanoseconds(d);
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
