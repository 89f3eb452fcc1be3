#include "http/wire_format.h"

#include "core/str_cat.h"

namespace swiftlet::http {
namespace {

bool IsOwnedField(std::string_view name) {
  return EqualsIgnoreCase(name, "content-length") ||
         EqualsIgnoreCase(name, "transfer-encoding") || EqualsIgnoreCase(name, "connection");
}

void AppendFields(std::string& out, const Headers& headers) {
  for (const auto& [name, value] : headers.fields()) {
    if (IsOwnedField(name) || !IsValidHeaderName(name) || !IsValidHeaderValue(value)) continue;
    out += name;
    out += ": ";
    out += value;
    out += "\r\n";
  }
}

}  // namespace

const char* ReasonPhrase(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

bool IsValidHeaderName(std::string_view name) {
  if (name.empty()) return false;
  for (unsigned char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                  std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool IsValidHeaderValue(std::string_view value) {
  for (char c : value) {
    if (c == '\r' || c == '\n' || c == '\0') return false;
  }
  return true;
}

std::string SerializeResponseHead(int status, const Headers& headers,
                                  std::optional<size_t> content_length, bool chunked,
                                  bool keep_alive) {
  std::string out = StrCat("HTTP/1.1 ", status, " ", ReasonPhrase(status), "\r\n");
  AppendFields(out, headers);
  if (content_length) {
    out += StrCat("Content-Length: ", *content_length, "\r\n");
  } else if (chunked) {
    out += "Transfer-Encoding: chunked\r\n";
  }
  if (!keep_alive) out += "Connection: close\r\n";
  out += "\r\n";
  return out;
}

std::string SerializeRequestHead(std::string_view method, std::string_view target,
                                 std::string_view host, const Headers& headers,
                                 size_t body_size) {
  std::string out = StrCat(method, " ", target, " HTTP/1.1\r\n");
  if (!headers.Has("host")) out += StrCat("Host: ", host, "\r\n");
  AppendFields(out, headers);
  if (body_size > 0 || method == "POST" || method == "PUT" || method == "PATCH") {
    out += StrCat("Content-Length: ", body_size, "\r\n");
  }
  out += "\r\n";
  return out;
}

ErrorBody PlainErrorBody(int /*status*/, std::string_view message) {
  return {"text/plain; charset=utf-8", StrCat(message, "\n")};
}

std::string SerializeErrorResponse(int status, const ErrorBody& body) {
  return SerializeResponseHead(status, Headers{{"Content-Type", body.content_type}}, body.body.size(),
                               false, false) +
         body.body;
}

void AppendChunk(std::string& out, std::string_view data) {
  if (data.empty()) return;
  char hex[20];
  size_t n = data.size();
  int len = 0;
  do {
    hex[len++] = "0123456789abcdef"[n & 0xf];
    n >>= 4;
  } while (n != 0);
  while (len > 0) out.push_back(hex[--len]);
  out += "\r\n";
  out.append(data);
  out += "\r\n";
}

std::string FrameSseEvent(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  size_t start = 0;
  while (true) {
    size_t end = data.find_first_of("\r\n", start);
    out += "data: ";
    out.append(data.substr(start, end == std::string_view::npos ? std::string_view::npos
                                                                 : end - start));
    out += "\n";
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (data[end] == '\r' && start < data.size() && data[start] == '\n') ++start;
  }
  out += "\n";
  return out;
}

}  // namespace swiftlet::http
