#include "plan/plan_flags.h"

#include <charconv>
#include <cmath>
#include <set>

#include "absl/strings/str_split.h"
#include "core/duration.h"
#include "core/str_cat.h"

namespace swiftlet::plan {
namespace {

// Splits "a:1,b:2" into (name, value) pairs; `sep` between them.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> SplitPairs(
    std::string_view flag, std::string_view text, char sep) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view item : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    const size_t at = item.find(sep);
    if (at == absl::string_view::npos || at == 0 || at + 1 == item.size()) {
      return absl::InvalidArgumentError(StrCat(flag, ": '", std::string(item), "' is not NAME", sep, "VALUE"));
    }
    out.emplace_back(std::string(item.substr(0, at)), std::string(item.substr(at + 1)));
    if (out.size() > static_cast<size_t>(kMaxSites)) {
      return absl::InvalidArgumentError(StrCat(flag, ": more than ", kMaxSites, " entries"));
    }
  }
  return out;
}

// A finite decimal number, all of `text`.
absl::StatusOr<double> ParseNumber(std::string_view flag, std::string_view what, std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) {
    return absl::InvalidArgumentError(StrCat(flag, ": ", what, " '", text, "' is not a number"));
  }
  return v;
}

bool IsSiteName(std::string_view name) {
  if (name.empty() || name.size() > kMaxSiteNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<SloSeconds> ParseSlo(std::string_view text) {
  auto list = ParseDurationList(text, {"ttft", "tpot", "e2e"});
  if (!list.ok()) return absl::InvalidArgumentError(StrCat("--slo: ", list.status().message()));
  SloSeconds slo;
  for (const auto& [key, ns] : *list) {
    const double s = static_cast<double>(ns) / 1e9;
    if (key == "ttft") slo.ttft = s;
    if (key == "tpot") slo.tpot = s;
    if (key == "e2e") slo.e2e = s;
  }
  return slo;
}

absl::StatusOr<std::vector<Site>> ParseSites(std::string_view text) {
  if (text.empty()) return std::vector<Site>{{"all", 1.0}};
  SWIFTLET_ASSIGN_OR_RETURN(const auto pairs, SplitPairs("--sites", text, ':'));
  std::vector<Site> sites;
  std::set<std::string> seen;
  double sum = 0;
  for (const auto& [name, value] : pairs) {
    if (!IsSiteName(name)) {
      return absl::InvalidArgumentError(StrCat("--sites: '", name, "' must be 1 to ", kMaxSiteNameBytes,
                                               " letters, digits, '-' or '_'"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(StrCat("--sites: '", name, "' appears twice"));
    }
    SWIFTLET_ASSIGN_OR_RETURN(const double share, ParseNumber("--sites", StrCat(name, "'s share"), value));
    if (!(share > 0) || share > 1) {
      return absl::InvalidArgumentError(StrCat("--sites: ", name, "'s share ", share, " is outside (0, 1]"));
    }
    sum += share;
    sites.push_back({name, share});
  }
  if (std::abs(sum - 1) > 1e-3) {
    return absl::InvalidArgumentError(StrCat("--sites: the shares sum to ", sum, ", not 1"));
  }
  return sites;
}

absl::StatusOr<Redundancy> ParseRedundancy(std::string_view text) {
  if (text == "n" || text == "none") return Redundancy{};
  if (text == "2n") return Redundancy{RedundancyRule::kDouble, 0};
  if (text.size() > 2 && text.substr(0, 2) == "n+") {
    const std::string_view k = text.substr(2);
    int64_t spares = 0;
    const auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), spares);
    if (ec == std::errc() && ptr == k.data() + k.size() && spares >= 0 && spares <= kMaxSpares) {
      return Redundancy{RedundancyRule::kSpares, spares};
    }
  }
  return absl::InvalidArgumentError(StrCat("--redundancy: '", text, "' is not n, n+K (K in 0..",
                                           kMaxSpares, ") or 2n"));
}

absl::StatusOr<std::vector<double>> ParseLinkMbps(std::string_view text,
                                                  const std::vector<Site>& sites) {
  auto check = [](std::string_view what, double v) -> absl::Status {
    if (!(v > 0) || v > kMaxLinkMbps) {
      return absl::InvalidArgumentError(
          StrCat("--link-mbps: ", what, v, " is outside (0, ", kMaxLinkMbps, "]"));
    }
    return absl::OkStatus();
  };
  if (text.find(':') == std::string_view::npos) {
    SWIFTLET_ASSIGN_OR_RETURN(const double v, ParseNumber("--link-mbps", "the speed", text));
    SWIFTLET_RETURN_IF_ERROR(check("", v));
    return std::vector<double>(sites.size(), v);
  }
  SWIFTLET_ASSIGN_OR_RETURN(const auto pairs, SplitPairs("--link-mbps", text, ':'));
  std::vector<double> out(sites.size(), 0);
  std::set<std::string> seen;
  for (const auto& [name, value] : pairs) {
    size_t i = 0;
    while (i < sites.size() && sites[i].name != name) ++i;
    if (i == sites.size()) {
      return absl::InvalidArgumentError(StrCat("--link-mbps: '", name, "' is not a site of --sites"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(StrCat("--link-mbps: '", name, "' appears twice"));
    }
    SWIFTLET_ASSIGN_OR_RETURN(out[i], ParseNumber("--link-mbps", StrCat(name, "'s speed"), value));
    SWIFTLET_RETURN_IF_ERROR(check(StrCat(name, ": "), out[i]));
  }
  for (size_t i = 0; i < sites.size(); ++i) {
    if (out[i] == 0) {
      return absl::InvalidArgumentError(StrCat("--link-mbps: no speed for site '", sites[i].name, "'"));
    }
  }
  return out;
}

absl::StatusOr<EfficiencyOverrides> ParseEfficiency(std::string_view text) {
  SWIFTLET_ASSIGN_OR_RETURN(const auto pairs, SplitPairs("--efficiency", text, '='));
  EfficiencyOverrides o;
  for (const auto& [key, value] : pairs) {
    std::optional<double>* slot = key == "decode"    ? &o.decode
                                  : key == "prefill" ? &o.prefill
                                  : key == "serving" ? &o.serving
                                                     : nullptr;
    if (slot == nullptr) {
      return absl::InvalidArgumentError(
          StrCat("--efficiency: '", key, "' is not decode, prefill or serving"));
    }
    if (slot->has_value()) {
      return absl::InvalidArgumentError(StrCat("--efficiency: '", key, "' appears twice"));
    }
    SWIFTLET_ASSIGN_OR_RETURN(const double v, ParseNumber("--efficiency", key, value));
    if (!(v > 0) || v > 1.5) {
      return absl::InvalidArgumentError(StrCat("--efficiency: ", key, "=", v, " is outside (0, 1.5]"));
    }
    *slot = v;
  }
  return o;
}

}  // namespace swiftlet::plan
