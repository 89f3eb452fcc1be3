// One HTTP/1.1 request and its response over a Transport, timed: when the
// first response byte arrived, and the body streamed to a callback as it
// arrives (Content-Length, chunked, or until close). Just enough HTTP for
// the probe; every size a peer controls is bounded (head 64 KiB, chunk
// framing by ChunkedDecoder, the body by what the caller keeps).
//
// Not thread-safe: one exchange per attempt, on the probing thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "http/message.h"
#include "probe/transport.h"

namespace swiftlet::probe {

inline constexpr size_t kMaxResponseHeadBytes = 64 << 10;

struct ResponseHead {
  int status = 0;
  http::Headers headers;
  bool chunked = false;
  std::optional<uint64_t> content_length;
};

// Parses a response head (status line and fields, up to and without the
// blank line). InvalidArgument when malformed.
absl::StatusOr<ResponseHead> ParseResponseHead(std::string_view head);

class HttpExchange {
 public:
  // Every read and write gives up at `deadline_ns` (steady clock).
  HttpExchange(Transport& transport, int64_t deadline_ns) : transport_(transport), deadline_ns_(deadline_ns) {}

  // Sends the request (Host is `host_port`; Content-Type JSON with a body).
  absl::Status Send(std::string_view method, std::string_view target, std::string_view host_port,
                    const http::Headers& headers, std::string_view body);

  // Reads the response head. `first_byte_ns`: when its first byte arrived.
  absl::StatusOr<ResponseHead> ReadHead(int64_t* first_byte_ns);

  // Streams the body after ReadHead to `on_data` (which returns false to
  // stop early). OK at the end of the body.
  absl::Status ReadBody(const ResponseHead& head, const std::function<bool(std::string_view)>& on_data);

 private:
  Transport& transport_;
  const int64_t deadline_ns_;
  std::string buffer_;  // Bytes read past the head.
};

}  // namespace swiftlet::probe
