// The sites a gateway routes to, as the operator names them: repeated
// `--site NAME=URL` flags or a sites file (reloaded on SIGHUP). Parsing only;
// plain functions, thread-safe.
//
// A sites file is text, one site per line: `NAME URL` or `NAME=URL`; blank
// lines and lines starting with '#' are skipped. Everything in it is
// untrusted: the file is read up to kMaxSitesFileBytes, a line up to
// kMaxSiteLineBytes, at most kMaxSites sites, names unique.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace swiftlet::gateway {

inline constexpr size_t kMaxSites = 64;
inline constexpr size_t kMaxSiteNameBytes = 64;
inline constexpr size_t kMaxSiteLineBytes = 1024;
inline constexpr size_t kMaxSitesFileBytes = 64 << 10;

// The transport to a site: plain HTTP, or HTTPS (the site's certificate
// verified against SiteClientOptions::ca_file, or the system's authorities).
enum class Scheme { kHttp, kHttps };

struct SiteSpec {
  std::string name;  // [A-Za-z0-9._-], 1..64 bytes: it goes into headers and metric labels.
  std::string url;   // As given, normalised: scheme://host:port (no path).
  Scheme scheme = Scheme::kHttp;
  std::string host;  // Without brackets for IPv6.
  uint16_t port = 80;  // 443 by default for https.

  bool operator==(const SiteSpec&) const = default;
};

// A site name: 1..64 of [A-Za-z0-9._-].
absl::Status CheckSiteName(std::string_view name);

// "http://HOST[:PORT][/]" or "https://HOST[:PORT][/]" (an optional
// trailing "/v1" is accepted and dropped, as OpenAI base URLs carry it).
absl::StatusOr<SiteSpec> ParseSite(std::string_view name, std::string_view url);

// One `--site` flag: "NAME=URL".
absl::StatusOr<SiteSpec> ParseSiteFlag(std::string_view text);

// The contents of a sites file. Errors name the line.
absl::StatusOr<std::vector<SiteSpec>> ParseSitesFile(std::string_view contents);

// Reads and parses a sites file (bounded read).
absl::StatusOr<std::vector<SiteSpec>> LoadSitesFile(const std::string& path);

// Checks a whole list: 1..kMaxSites sites, names unique.
absl::Status CheckSiteList(const std::vector<SiteSpec>& sites);

}  // namespace swiftlet::gateway
