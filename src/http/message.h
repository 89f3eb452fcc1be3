// Plain HTTP message types shared by the server and the client. No Boost
// types: handlers and tests use these without compiling Beast.
#pragma once

#include <optional>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace swiftlet::http {

// Header fields in arrival order; names compare case-insensitively (ASCII).
// Not thread-safe for writes; a const Headers may be read from any thread.
class Headers {
 public:
  Headers() = default;
  Headers(std::initializer_list<std::pair<std::string, std::string>> fields);

  // Appends a field (a repeated name keeps every value).
  void Add(std::string name, std::string value);
  // Replaces every field of that name with one.
  void Set(std::string name, std::string value);
  void Remove(std::string_view name);

  // The first value of `name`, or nullopt.
  std::optional<std::string_view> Get(std::string_view name) const;
  bool Has(std::string_view name) const { return Get(name).has_value(); }

  const std::vector<std::pair<std::string, std::string>>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }
  bool empty() const { return fields_.empty(); }

 private:
  std::vector<std::pair<std::string, std::string>> fields_;
};

// ASCII case-insensitive equality, for header names and tokens.
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// One request as the server's handler receives it.
struct HttpRequest {
  std::string method;  // "GET", "POST", ... as sent (case-sensitive per RFC 9110)
  std::string target;  // As sent: "/v1/models?x=1"
  std::string path;    // target up to '?': "/v1/models"
  std::string query;   // After '?', raw (not percent-decoded); empty if none
  Headers headers;
  std::string body;    // Whole body (Content-Length or chunked, decoded)
  int version = 11;    // 10 or 11
  std::string remote_address;  // "ip:port" of the peer
  // When the server began to read this request (its first bytes were
  // there): steady_clock nanoseconds since its epoch, the scale of
  // core/clock.h's SystemClock. Time to first token counts from here.
  int64_t received_ns = 0;
  // Who the application found the request to come from (an API key's id),
  // once it authenticated it; empty before. Logs name it.
  std::string principal;
};

}  // namespace swiftlet::http
