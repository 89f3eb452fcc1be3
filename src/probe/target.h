// A probe target as the user names it: http://HOST[:PORT] (a trailing "/"
// or "/v1" is dropped). https parses, so the report can say that TLS
// probing is not there yet (issue 24) instead of failing on the URL.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"

namespace swiftlet::probe {

enum class Scheme { kHttp, kHttps };

struct Target {
  std::string url;  // Normalised: scheme://host:port
  Scheme scheme = Scheme::kHttp;
  std::string host;  // Without brackets for IPv6.
  uint16_t port = 80;

  bool operator==(const Target&) const = default;
};

absl::StatusOr<Target> ParseTarget(std::string_view url);

}  // namespace swiftlet::probe
