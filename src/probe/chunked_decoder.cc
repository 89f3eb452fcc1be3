#include "probe/chunked_decoder.h"

#include <algorithm>

#include "core/str_cat.h"

namespace swiftlet::probe {
namespace {

constexpr uint64_t kMaxChunk = uint64_t{1} << 40;

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::Status ChunkedDecoder::Fail(std::string_view why) {
  status_ = absl::InvalidArgumentError(StrCat("chunked body: ", why));
  return status_;
}

// A complete line (without its LF; a CR before it is dropped here) for the
// size, the CRLF after data, or a trailer.
absl::Status ChunkedDecoder::EndLine() {
  std::string_view line = line_;
  if (line.ends_with("\r")) line.remove_suffix(1);
  switch (state_) {
    case State::kSize: {
      const size_t semi = line.find(';');  // Extensions are ignored.
      std::string_view digits = line.substr(0, semi);
      while (!digits.empty() && (digits.back() == ' ' || digits.back() == '\t')) digits.remove_suffix(1);
      if (digits.empty()) return Fail("empty chunk size");
      uint64_t size = 0;
      for (char c : digits) {
        const int v = Hex(c);
        if (v < 0) return Fail("bad chunk size");
        size = size * 16 + static_cast<uint64_t>(v);
        if (size > kMaxChunk) return Fail("chunk size too large");
      }
      left_ = size;
      state_ = size == 0 ? State::kTrailer : State::kData;
      break;
    }
    case State::kDataEnd:
      if (!line.empty()) return Fail("no CRLF after chunk data");
      state_ = State::kSize;
      break;
    case State::kTrailer:
      if (line.empty()) state_ = State::kDone;
      break;
    case State::kData:
    case State::kDone:
      break;
  }
  line_.clear();
  return absl::OkStatus();
}

absl::Status ChunkedDecoder::Feed(std::string_view in, const std::function<void(std::string_view)>& out) {
  if (!status_.ok()) return status_;
  while (!in.empty() && state_ != State::kDone) {
    if (state_ == State::kData) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left_, in.size()));
      out(in.substr(0, n));
      in.remove_prefix(n);
      left_ -= n;
      if (left_ == 0) state_ = State::kDataEnd;
      continue;
    }
    const size_t nl = in.find('\n');
    const std::string_view part = in.substr(0, nl);
    if (line_.size() + part.size() > kMaxLineBytes) return Fail("line too long");
    if (state_ == State::kTrailer) {
      trailer_bytes_ += part.size() + 1;
      if (trailer_bytes_ > kMaxTrailerBytes) return Fail("trailers too large");
    }
    line_.append(part);
    if (nl == std::string_view::npos) return absl::OkStatus();
    in.remove_prefix(nl + 1);
    SWIFTLET_RETURN_IF_ERROR(EndLine());
  }
  return absl::OkStatus();
}

}  // namespace swiftlet::probe
