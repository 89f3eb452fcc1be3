#include "gateway/forwarding.h"

#include <charconv>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/errors.h"
#include "core/str_cat.h"
#include "gateway/affinity.h"

namespace swiftlet::gateway {
namespace {

bool IsHopByHop(std::string_view name) {
  for (std::string_view h : {"connection", "keep-alive", "proxy-connection", "proxy-authenticate",
                             "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"}) {
    if (http::EqualsIgnoreCase(name, h)) return true;
  }
  return false;
}

// The field names a Connection header lists (they are hop-by-hop too).
bool NamedByConnection(const http::Headers& headers, std::string_view name) {
  for (const auto& [n, v] : headers.fields()) {
    if (!http::EqualsIgnoreCase(n, "connection")) continue;
    std::string_view rest = v;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      std::string_view token = rest.substr(0, comma);
      while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
      while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
      if (http::EqualsIgnoreCase(token, name)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

std::string_view HostOf(std::string_view address) {
  // "ip:port" or "[v6]:port".
  if (address.starts_with("[")) {
    const size_t close = address.find(']');
    return close == std::string_view::npos ? address : address.substr(1, close - 1);
  }
  const size_t colon = address.rfind(':');
  return colon == std::string_view::npos ? address : address.substr(0, colon);
}

http::Headers Forwarded(const http::HttpRequest& request, bool upgrade) {
  http::Headers out;
  std::string forwarded_for;
  for (const auto& [name, value] : request.headers.fields()) {
    if (IsHopByHop(name) || NamedByConnection(request.headers, name) || http::EqualsIgnoreCase(name, "host") ||
        http::EqualsIgnoreCase(name, "content-length") || http::EqualsIgnoreCase(name, "expect")) {
      continue;
    }
    if (upgrade && (http::EqualsIgnoreCase(name, "sec-websocket-key") ||
                    http::EqualsIgnoreCase(name, "sec-websocket-version") ||
                    http::EqualsIgnoreCase(name, "sec-websocket-extensions") ||
                    http::EqualsIgnoreCase(name, "sec-websocket-accept"))) {
      continue;
    }
    if (http::EqualsIgnoreCase(name, "x-forwarded-for")) {
      forwarded_for = value;
      continue;
    }
    out.Add(name, value);
  }
  const std::string_view client = HostOf(request.remote_address);
  if (!client.empty()) {
    forwarded_for = forwarded_for.empty() ? std::string(client) : StrCat(forwarded_for, ", ", client);
  }
  if (!forwarded_for.empty()) out.Add("X-Forwarded-For", std::move(forwarded_for));
  return out;
}

std::optional<int64_t> ParseCount(std::string_view text, int64_t max) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0 || v > max) return std::nullopt;
  return v;
}

// Finds the top-level "stream_id" string with nlohmann's SAX interface:
// nothing is built, depth costs a counter, and the scan stops once found.
class StreamIdFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> found;

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t& s) override {
    if (depth_ == 1 && key_is_id_ && s.size() <= kMaxStreamIdBytes && !s.empty()) {
      found = s;
      return false;  // Done: stop parsing.
    }
    return Value();
  }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override { return Open(); }
  bool key(string_t& k) override {
    key_is_id_ = depth_ == 1 && k == "stream_id";
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool Value() {
    key_is_id_ = false;
    return true;
  }
  bool Open() {
    if (depth_ == 0 && seen_top_) return false;
    seen_top_ = true;
    key_is_id_ = false;
    return ++depth_ < 256;  // Deeper than any request of the API: stop.
  }
  bool Close() {
    --depth_;
    key_is_id_ = false;
    return true;
  }
  int depth_ = 0;
  bool seen_top_ = false;
  bool key_is_id_ = false;
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

http::Headers UpstreamRequestHeaders(const http::HttpRequest& request) { return Forwarded(request, false); }

http::Headers UpstreamUpgradeHeaders(const http::HttpRequest& request) { return Forwarded(request, true); }

http::Headers DownstreamResponseHeaders(const http::Headers& upstream, std::string_view site) {
  http::Headers out;
  for (const auto& [name, value] : upstream.fields()) {
    if (IsHopByHop(name) || NamedByConnection(upstream, name) || http::EqualsIgnoreCase(name, "content-length") ||
        http::EqualsIgnoreCase(name, kSiteHeader)) {
      continue;
    }
    out.Add(name, value);
  }
  out.Add(std::string(kSiteHeader), std::string(site));
  return out;
}

std::optional<int64_t> RetryAfterNs(const http::Headers& headers) {
  if (auto ms = headers.Get("retry-after-ms")) {
    if (auto v = ParseCount(*ms, 3'600'000)) return *v * 1'000'000;
  }
  if (auto s = headers.Get("retry-after")) {
    if (auto v = ParseCount(*s, 3'600)) return *v * 1'000'000'000;
    return int64_t{1'000'000'000};
  }
  return std::nullopt;
}

std::optional<std::string> StreamIdFromBody(std::string_view body) {
  // Cheap test first: most bodies carry no stream id at all.
  if (body.find("\"stream_id\"") == std::string_view::npos) return std::nullopt;
  StreamIdFinder finder;
  nlohmann::json::sax_parse(body, &finder, nlohmann::json::input_format_t::json, /*strict=*/false);
  return finder.found;
}

std::optional<std::string> StreamIdFromQuery(std::string_view query) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (!pair.starts_with("stream_id=")) continue;
    std::string_view raw = pair.substr(10);
    if (raw.empty() || raw.size() > 3 * kMaxStreamIdBytes) return std::nullopt;
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '%') {
        if (i + 2 >= raw.size()) return std::nullopt;
        const int hi = HexValue(raw[i + 1]);
        const int lo = HexValue(raw[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
      } else {
        out.push_back(raw[i] == '+' ? ' ' : raw[i]);
      }
    }
    if (out.size() > kMaxStreamIdBytes) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

std::string ErrorJson(int http_status, std::string_view message, std::string_view code) {
  absl::Status status = api::WithHttpStatus(absl::UnavailableError(std::string(message)), http_status);
  if (!code.empty()) status = api::WithErrorCode(status, code);
  return api::SerializeError(api::ApiErrorFromStatus(status));
}

std::string StreamErrorEventData(std::string_view message) { return ErrorJson(502, message, "upstream_lost"); }

}  // namespace swiftlet::gateway
