#include "http/websocket.h"

#include <string_view>

namespace swiftlet::http {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether any field called `name` lists `token` (comma-separated, any case).
bool HasToken(const Headers& headers, std::string_view name, std::string_view token) {
  for (const auto& [n, value] : headers.fields()) {
    if (!EqualsIgnoreCase(n, name)) continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      if (EqualsIgnoreCase(Trim(rest.substr(0, comma)), token)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

// Base64 of 16 bytes: 22 alphabet characters, then "==".
bool IsNonceKey(std::string_view key) {
  if (key.size() != 24 || key.substr(22) != "==") return false;
  for (char c : key.substr(0, 22)) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

bool IsSendableCloseCode(int code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

std::string_view WebSocketUpgradeProblem(const HttpRequest& request) {
  if (request.method != "GET") return "a WebSocket opening handshake is a GET";
  if (request.version < 11) return "a WebSocket opening handshake needs HTTP/1.1";
  if (!HasToken(request.headers, "upgrade", "websocket")) return "no \"Upgrade: websocket\" field";
  if (!HasToken(request.headers, "connection", "upgrade")) return "no \"Connection: Upgrade\" field";
  if (!request.headers.Has("host")) return "no Host field";
  if (!IsNonceKey(Trim(request.headers.Get("sec-websocket-key").value_or("")))) {
    return "Sec-WebSocket-Key is missing or not the base64 of 16 bytes";
  }
  if (Trim(request.headers.Get("sec-websocket-version").value_or("")) != "13") {
    return "Sec-WebSocket-Version must be 13";
  }
  return {};
}

bool IsWebSocketUpgrade(const HttpRequest& request) { return WebSocketUpgradeProblem(request).empty(); }

}  // namespace swiftlet::http
