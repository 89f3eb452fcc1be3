#include "probe/target.h"

#include <charconv>

#include "core/str_cat.h"

namespace swiftlet::probe {
namespace {

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_' || c == ':';
}

}  // namespace

absl::StatusOr<Target> ParseTarget(std::string_view url) {
  const std::string shown(url.substr(0, 200));
  Target t;
  std::string_view rest = url;
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
    t.scheme = Scheme::kHttp;
    t.port = 80;
  } else if (rest.starts_with("https://")) {
    rest.remove_prefix(8);
    t.scheme = Scheme::kHttps;
    t.port = 443;
  } else {
    return absl::InvalidArgumentError(StrCat("expected http://HOST[:PORT], got \"", shown, "\""));
  }
  if (rest.ends_with("/")) rest.remove_suffix(1);
  if (rest.ends_with("/v1")) rest.remove_suffix(3);
  if (rest.find_first_of("/@?#") != std::string_view::npos) {
    return absl::InvalidArgumentError(StrCat("a target is scheme://HOST[:PORT] with no path, got \"", shown, "\""));
  }
  std::string_view host = rest, port;
  if (rest.starts_with("[")) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos) return absl::InvalidArgumentError(StrCat("unclosed '[' in \"", shown, "\""));
    host = rest.substr(1, close - 1);
    const std::string_view after = rest.substr(close + 1);
    if (!after.empty() && after[0] != ':') return absl::InvalidArgumentError(StrCat("bad host in \"", shown, "\""));
    if (!after.empty()) port = after.substr(1);
    if (after == ":") return absl::InvalidArgumentError(StrCat("empty port in \"", shown, "\""));
  } else if (const size_t colon = rest.rfind(':'); colon != std::string_view::npos) {
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
    if (port.empty()) return absl::InvalidArgumentError(StrCat("empty port in \"", shown, "\""));
    if (host.find(':') != std::string_view::npos) {
      return absl::InvalidArgumentError(StrCat("put an IPv6 address in brackets: \"", shown, "\""));
    }
  }
  if (host.empty() || host.size() > 253) return absl::InvalidArgumentError(StrCat("no host in \"", shown, "\""));
  for (char c : host) {
    if (!IsHostChar(c)) return absl::InvalidArgumentError(StrCat("bad host in \"", shown, "\""));
  }
  if (!port.empty()) {
    unsigned v = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || end != port.data() + port.size() || v == 0 || v > 65535) {
      return absl::InvalidArgumentError(StrCat("port must be 1..65535 in \"", shown, "\""));
    }
    t.port = static_cast<uint16_t>(v);
  }
  t.host = std::string(host);
  const bool v6 = t.host.find(':') != std::string::npos;
  t.url = StrCat(t.scheme == Scheme::kHttps ? "https://" : "http://", v6 ? "[" : "", t.host, v6 ? "]" : "", ":",
                 t.port);
  return t;
}

}  // namespace swiftlet::probe
