#include "gateway/site_config.h"

#include <charconv>
#include <fstream>
#include <set>

#include "core/str_cat.h"

namespace swiftlet::gateway {
namespace {

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// Host characters we pass to the resolver: a name, an IPv4 address, or an
// IPv6 address (inside brackets in the URL). Nothing that could smuggle
// a path, credentials or header bytes.
bool IsHostChar(char c) { return IsNameChar(c) || c == ':'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

absl::Status CheckSiteName(std::string_view name) {
  if (name.empty() || name.size() > kMaxSiteNameBytes) {
    return absl::InvalidArgumentError(StrCat("site name must be 1..", kMaxSiteNameBytes, " characters"));
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return absl::InvalidArgumentError(
          StrCat("site name \"", name, "\": only letters, digits, '.', '_' and '-' are allowed"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<SiteSpec> ParseSite(std::string_view name, std::string_view url) {
  SWIFTLET_RETURN_IF_ERROR(CheckSiteName(name));
  const std::string shown(url.substr(0, 200));
  SiteSpec spec;
  spec.name = std::string(name);
  std::string_view rest = url;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    spec.scheme = Scheme::kHttp;
    spec.port = 80;
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    spec.scheme = Scheme::kHttps;
    spec.port = 443;
  } else {
    return absl::InvalidArgumentError(
        StrCat("site ", name, ": expected http://HOST[:PORT] or https://HOST[:PORT], got \"", shown, "\""));
  }
  if (rest.ends_with("/")) rest.remove_suffix(1);
  if (rest.ends_with("/v1")) rest.remove_suffix(3);
  if (rest.find('/') != std::string_view::npos || rest.find('@') != std::string_view::npos ||
      rest.find('?') != std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("site ", name, ": a site URL is scheme://HOST[:PORT] with no path, user or query, got \"", shown, "\""));
  }
  std::string_view host = rest, port;
  if (rest.starts_with("[")) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("site ", name, ": unclosed '[' in \"", shown, "\""));
    }
    host = rest.substr(1, close - 1);
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return absl::InvalidArgumentError(StrCat("site ", name, ": bad host in \"", shown, "\""));
      port = after.substr(1);
    }
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("site ", name, ": put an IPv6 address in brackets: \"", shown, "\""));
    }
  }
  if (host.empty() || host.size() > 253) {
    return absl::InvalidArgumentError(StrCat("site ", name, ": no host in \"", shown, "\""));
  }
  for (char c : host) {
    if (!IsHostChar(c)) return absl::InvalidArgumentError(StrCat("site ", name, ": bad host in \"", shown, "\""));
  }
  if (rest.ends_with(":") && port.empty()) {
    return absl::InvalidArgumentError(StrCat("site ", name, ": empty port in \"", shown, "\""));
  }
  if (!port.empty()) {
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535) {
      return absl::InvalidArgumentError(StrCat("site ", name, ": port must be 1..65535 in \"", shown, "\""));
    }
    spec.port = static_cast<uint16_t>(value);
  }
  spec.host = std::string(host);
  const bool v6 = spec.host.find(':') != std::string::npos;
  spec.url = StrCat(spec.scheme == Scheme::kHttps ? "https://" : "http://", v6 ? "[" : "", spec.host, v6 ? "]" : "",
                    ":", spec.port);
  return spec;
}

absl::StatusOr<SiteSpec> ParseSiteFlag(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos) {
    return absl::InvalidArgumentError(
        StrCat("--site: expected NAME=URL, e.g. hk=http://10.0.0.5:8080, got \"", text.substr(0, 200), "\""));
  }
  return ParseSite(Trim(text.substr(0, eq)), Trim(text.substr(eq + 1)));
}

absl::StatusOr<std::vector<SiteSpec>> ParseSitesFile(std::string_view contents) {
  if (contents.size() > kMaxSitesFileBytes) {
    return absl::InvalidArgumentError(StrCat("sites file: larger than ", kMaxSitesFileBytes, " bytes"));
  }
  std::vector<SiteSpec> sites;
  size_t line_number = 0;
  while (!contents.empty()) {
    ++line_number;
    const size_t nl = contents.find('\n');
    std::string_view line = contents.substr(0, nl);
    contents = nl == std::string_view::npos ? std::string_view() : contents.substr(nl + 1);
    if (line.size() > kMaxSiteLineBytes) {
      return absl::InvalidArgumentError(StrCat("sites file line ", line_number, ": longer than ",
                                               kMaxSiteLineBytes, " bytes"));
    }
    line = Trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (sites.size() == kMaxSites) {
      return absl::InvalidArgumentError(StrCat("sites file: more than ", kMaxSites, " sites"));
    }
    const size_t split = line.find_first_of(" \t=");
    if (split == std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("sites file line ", line_number, ": expected NAME URL"));
    }
    auto spec = ParseSite(Trim(line.substr(0, split)), Trim(line.substr(split + 1)));
    if (!spec.ok()) {
      return absl::Status(spec.status().code(),
                          StrCat("sites file line ", line_number, ": ", spec.status().message()));
    }
    sites.push_back(*std::move(spec));
  }
  SWIFTLET_RETURN_IF_ERROR(CheckSiteList(sites));
  return sites;
}

absl::StatusOr<std::vector<SiteSpec>> LoadSitesFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(StrCat("cannot open sites file ", path));
  std::string contents(kMaxSitesFileBytes + 1, '\0');
  in.read(contents.data(), static_cast<std::streamsize>(contents.size()));
  contents.resize(static_cast<size_t>(in.gcount()));
  auto sites = ParseSitesFile(contents);
  if (!sites.ok()) return absl::Status(sites.status().code(), StrCat(path, ": ", sites.status().message()));
  return sites;
}

absl::Status CheckSiteList(const std::vector<SiteSpec>& sites) {
  if (sites.empty()) return absl::InvalidArgumentError("no sites: give --site NAME=URL or --sites FILE");
  if (sites.size() > kMaxSites) return absl::InvalidArgumentError(StrCat("more than ", kMaxSites, " sites"));
  std::set<std::string_view> names;
  for (const SiteSpec& s : sites) {
    if (!names.insert(s.name).second) {
      return absl::InvalidArgumentError(StrCat("site name \"", s.name, "\" is given twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace swiftlet::gateway
