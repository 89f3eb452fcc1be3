// The server's request parsing as a plain function over bytes: the same
// Beast parser, limits and refusals (431, 413, 400) that a connection
// applies while it reads (server.cc reads through the helpers of
// request_reading.h, which this runs too), without sockets. For the fuzz
// target (fuzz/http_request_fuzz.cc) and tests; no Boost types here.
//
// Thread-safe (no shared state).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "http/message.h"

namespace swiftlet::http {

struct RequestLimits {
  size_t max_header_bytes = 16 << 10;  // Request line and header fields.
  size_t max_body_bytes = 8 << 20;
};

struct RequestParseResult {
  enum class Outcome {
    kComplete,    // `request` holds the first request of the bytes.
    kIncomplete,  // The bytes end inside a request: the server would wait
                  // (and its timeouts close the connection).
    kRefused,     // The server answers `status` with `message` and closes.
  };
  Outcome outcome = Outcome::kIncomplete;
  int status = 0;        // kRefused: 400, 413 or 431.
  std::string message;   // kRefused: the answer's text.
  HttpRequest request;   // kComplete (remote_address, received_ns unset).
  bool keep_alive = false;       // kComplete: another request may follow.
  bool expects_continue = false;  // The header asked for 100 Continue.
  size_t consumed = 0;   // kComplete: bytes of the request in `bytes`.
};

// Parses the first request in `bytes`, handing them to the parser in
// pieces of at most `piece_bytes` (>= 1), as reads from a socket would:
// the outcome must not depend on how the bytes were split.
RequestParseResult ParseHttpRequest(std::string_view bytes, const RequestLimits& limits,
                                    size_t piece_bytes = 4096);

}  // namespace swiftlet::http
