// Incremental decoder of HTTP/1.1 chunked transfer encoding (RFC 9112
// section 7.1), fed the body bytes as they arrive in any split. Chunk
// extensions and trailers are read and dropped. Untrusted input: a size
// line or trailer line is bounded (kMaxLineBytes), trailers in total too,
// and a chunk size that does not fit 2^40 is an error, so nothing a peer
// sends makes it allocate more than a line.
//
// Not thread-safe: one decoder per response.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace swiftlet::probe {

class ChunkedDecoder {
 public:
  static constexpr size_t kMaxLineBytes = 4096;
  static constexpr size_t kMaxTrailerBytes = 16 << 10;

  // Decodes `in`, passing each run of body bytes to `out`. Stops consuming
  // at the end of the body (done() turns true); bytes after it are ignored.
  // InvalidArgument for malformed framing; every later call returns it too.
  absl::Status Feed(std::string_view in, const std::function<void(std::string_view)>& out);

  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kData, kDataEnd, kTrailer, kDone };
  absl::Status Fail(std::string_view why);
  absl::Status EndLine();

  State state_ = State::kSize;
  std::string line_;
  uint64_t left_ = 0;
  size_t trailer_bytes_ = 0;
  absl::Status status_;
};

}  // namespace swiftlet::probe
