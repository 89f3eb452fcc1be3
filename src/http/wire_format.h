// HTTP/1.1 and Server-Sent Events framing as bytes: what the server and the
// client put on the wire. Plain functions, no state, thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "http/message.h"

namespace swiftlet::http {

// "OK", "Not Found", ...; "Unknown" for codes it does not know.
const char* ReasonPhrase(int status);

// RFC 9110 token characters only / no CR, LF or NUL.
bool IsValidHeaderName(std::string_view name);
bool IsValidHeaderValue(std::string_view value);

// Status line and header block, ending with the empty line. `headers` are
// the handler's; fields with invalid names or values are dropped (no header
// injection), and so are Content-Length, Transfer-Encoding and Connection,
// which this function owns: Content-Length when `content_length` is set,
// else Transfer-Encoding: chunked when `chunked`, else neither (the body
// runs to connection close); Connection: close unless `keep_alive`.
std::string SerializeResponseHead(int status, const Headers& headers,
                                  std::optional<size_t> content_length, bool chunked,
                                  bool keep_alive);

// Request line and headers for a client request with a body of `body_size`
// bytes (Content-Length: 0 is written for an empty body only with POST/PUT/
// PATCH). Adds Host unless `headers` has one. Same dropping rules.
std::string SerializeRequestHead(std::string_view method, std::string_view target,
                                 std::string_view host, const Headers& headers,
                                 size_t body_size);

// The body of an error response the transport sends on its own (400, 413,
// 431, 503 ...). Its shape is the application's: the server installs it
// (HttpServerOptions::error_body); the transport knows no API.
struct ErrorBody {
  std::string content_type;
  std::string body;
};
using ErrorBodyFn = std::function<ErrorBody(int status, std::string_view message)>;

// The default: the message as plain text, with a newline.
ErrorBody PlainErrorBody(int status, std::string_view message);

// A whole error response: `body`, then Connection: close.
std::string SerializeErrorResponse(int status, const ErrorBody& body);

// Appends one chunk of chunked transfer encoding: "<hex size>\r\n<data>\r\n".
// An empty `data` appends nothing (an empty chunk would end the body).
void AppendChunk(std::string& out, std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

// One SSE event carrying `data`: "data: <line>\n" for each line of `data`
// (split at \r\n, \n or \r, so a reader gets the lines back joined by \n),
// then the blank line that ends the event.
std::string FrameSseEvent(std::string_view data);

}  // namespace swiftlet::http
