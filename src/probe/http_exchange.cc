#include "probe/http_exchange.h"

#include <algorithm>
#include <charconv>

#include "core/str_cat.h"
#include "http/wire_format.h"
#include "probe/chunked_decoder.h"

namespace swiftlet::probe {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

absl::StatusOr<ResponseHead> ParseResponseHead(std::string_view head) {
  ResponseHead out;
  const size_t eol = head.find('\n');
  const std::string_view status_line = Trim(head.substr(0, eol));
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12 || status_line[8] != ' ') {
    return absl::InvalidArgumentError("not an HTTP/1.x status line");
  }
  int code = 0;
  auto [end, ec] = std::from_chars(status_line.data() + 9, status_line.data() + 12, code);
  if (ec != std::errc() || end != status_line.data() + 12 || code < 100 || code > 599 ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return absl::InvalidArgumentError("bad status code");
  }
  out.status = code;
  std::string_view rest = eol == std::string_view::npos ? std::string_view() : head.substr(eol + 1);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    const std::string_view line = Trim(rest.substr(0, nl));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return absl::InvalidArgumentError("bad header line");
    const std::string_view name = line.substr(0, colon);
    const std::string_view value = Trim(line.substr(colon + 1));
    if (http::EqualsIgnoreCase(name, "content-length")) {
      uint64_t n = 0;
      auto [e, err] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (err != std::errc() || e != value.data() + value.size()) return absl::InvalidArgumentError("bad Content-Length");
      out.content_length = n;
    } else if (http::EqualsIgnoreCase(name, "transfer-encoding")) {
      out.chunked = value.size() >= 7 && http::EqualsIgnoreCase(value.substr(value.size() - 7), "chunked");
    }
    out.headers.Add(std::string(name), std::string(value));
  }
  return out;
}

absl::Status HttpExchange::Send(std::string_view method, std::string_view target, std::string_view host_port,
                                const http::Headers& headers, std::string_view body) {
  http::Headers h = headers;
  if (!body.empty() && !h.Has("content-type")) h.Add("Content-Type", "application/json");
  std::string wire = http::SerializeRequestHead(method, target, host_port, h, body.size());
  wire.append(body);
  return transport_.Write(wire, deadline_ns_);
}

absl::StatusOr<ResponseHead> HttpExchange::ReadHead(int64_t* first_byte_ns) {
  char chunk[16384];
  bool first = true;
  while (true) {
    SWIFTLET_ASSIGN_OR_RETURN(size_t n, transport_.Read(chunk, sizeof(chunk), deadline_ns_));
    if (n == 0) return absl::UnavailableError("the connection closed before a response");
    if (first) {
      if (first_byte_ns != nullptr) *first_byte_ns = NowNs();
      first = false;
    }
    buffer_.append(chunk, n);
    const size_t end = buffer_.find("\r\n\r\n");
    if (end != std::string::npos) {
      SWIFTLET_ASSIGN_OR_RETURN(ResponseHead head, ParseResponseHead(std::string_view(buffer_).substr(0, end)));
      buffer_.erase(0, end + 4);
      return head;
    }
    if (buffer_.size() > kMaxResponseHeadBytes) return absl::ResourceExhaustedError("response head too large");
  }
}

absl::Status HttpExchange::ReadBody(const ResponseHead& head, const std::function<bool(std::string_view)>& on_data) {
  ChunkedDecoder chunked;
  uint64_t left = head.content_length.value_or(0);
  bool stop = false;
  // Feeds one run of raw bytes; true once the body is complete.
  auto feed = [&](std::string_view raw) -> absl::StatusOr<bool> {
    if (head.chunked) {
      SWIFTLET_RETURN_IF_ERROR(chunked.Feed(raw, [&](std::string_view data) {
        if (!stop && !on_data(data)) stop = true;
      }));
      return chunked.done() || stop;
    }
    if (head.content_length.has_value()) {
      const std::string_view part = raw.substr(0, static_cast<size_t>(std::min<uint64_t>(left, raw.size())));
      left -= part.size();
      if (!part.empty() && !on_data(part)) return true;
      return left == 0;
    }
    return !on_data(raw);  // Until the connection closes.
  };
  if (head.status == 204 || head.status == 304 || (head.content_length == uint64_t{0} && !head.chunked)) {
    return absl::OkStatus();
  }
  if (!buffer_.empty()) {
    std::string pending = std::move(buffer_);
    buffer_.clear();
    SWIFTLET_ASSIGN_OR_RETURN(bool done, feed(pending));
    if (done) return absl::OkStatus();
  }
  char chunk[65536];
  while (true) {
    SWIFTLET_ASSIGN_OR_RETURN(size_t n, transport_.Read(chunk, sizeof(chunk), deadline_ns_));
    if (n == 0) {
      if (head.chunked || head.content_length.has_value()) {
        return absl::UnavailableError("the connection closed before the body ended");
      }
      return absl::OkStatus();
    }
    SWIFTLET_ASSIGN_OR_RETURN(bool done, feed(std::string_view(chunk, n)));
    if (done) return absl::OkStatus();
  }
}

}  // namespace swiftlet::probe
