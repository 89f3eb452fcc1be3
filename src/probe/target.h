// A probe target as the user names it: http://HOST[:PORT] or
// https://HOST[:PORT] (ports 80 and 443 by default; a trailing "/" or
// "/v1" is dropped).
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
