// One request's parsing with Beast, shared by the server's connections
// (through request_reading.h) and ParseHttpRequest.
#include "http/request_parser.h"

#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <algorithm>
#include <cstdint>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "http/request_reading.h"

namespace swiftlet::http {
namespace internal {
namespace {

namespace bhttp = boost::beast::http;
using boost::system::error_code;

// The parser's own complaints about the bytes (not end of stream, which
// only means the client left).
bool IsParseError(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

// What the parser found wrong, so the client learns which part to fix.
std::string_view Malformed(const error_code& ec) {
  using bhttp::error;
  if (ec == error::bad_line_ending) return "malformed HTTP request: lines must end in CRLF";
  if (ec == error::bad_method) return "malformed HTTP request: bad method";
  if (ec == error::bad_target) return "malformed HTTP request: bad request target";
  if (ec == error::bad_version) return "malformed HTTP request: bad version (HTTP/1.0 or HTTP/1.1)";
  if (ec == error::bad_field) return "malformed HTTP request: bad header field name";
  if (ec == error::bad_value) return "malformed HTTP request: bad header field value";
  if (ec == error::bad_content_length) return "malformed HTTP request: bad Content-Length";
  if (ec == error::bad_transfer_encoding) return "malformed HTTP request: bad Transfer-Encoding";
  if (ec == error::bad_chunk) return "malformed HTTP request body: bad chunk";
  if (ec == error::bad_chunk_extension) return "malformed HTTP request body: bad chunk extension";
  if (ec == error::bad_obs_fold) return "malformed HTTP request: folded header line";
  return "malformed HTTP request";
}

}  // namespace

void SetRequestLimits(RequestParser& parser, const RequestLimits& limits) {
  parser.header_limit(static_cast<uint32_t>(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
  parser.body_limit(limits.max_body_bytes);
}

std::optional<Refusal> RefuseHeader(const error_code& ec) {
  // buffer_overflow: the connection's read buffer (the header limit plus
  // some slack) filled before the header ended.
  if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
    return Refusal{431, "request header fields too large"};
  }
  if (ec == bhttp::error::body_limit) return Refusal{413, "request body too large"};
  if (IsParseError(ec)) return Refusal{400, Malformed(ec)};
  return std::nullopt;
}

std::optional<Refusal> RefuseParsedHeader(const RequestParser& parser, size_t header_bytes,
                                          const RequestLimits& limits) {
  if (header_bytes > limits.max_header_bytes) return Refusal{431, "request header fields too large"};
  if (parser.content_length() && *parser.content_length() > limits.max_body_bytes) {
    return Refusal{413, "request body too large"};
  }
  return std::nullopt;
}

std::optional<Refusal> RefuseBody(const error_code& ec) {
  if (ec == bhttp::error::body_limit) return Refusal{413, "request body too large"};
  if (IsParseError(ec)) return Refusal{400, Malformed(ec)};
  return std::nullopt;
}

bool ExpectsContinue(const RequestParser& parser) {
  auto expect = parser.get().find(bhttp::field::expect);
  return expect != parser.get().end() &&
         EqualsIgnoreCase(std::string_view(expect->value().data(), expect->value().size()),
                          "100-continue");
}

TakenRequest TakeRequest(RequestParser& parser) {
  bhttp::request<bhttp::string_body> message = parser.release();
  TakenRequest taken;
  HttpRequest& request = taken.request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  const size_t q = request.target.find('?');
  request.path = request.target.substr(0, q);
  if (q != std::string::npos) request.query = request.target.substr(q + 1);
  for (const auto& field : message) {
    request.headers.Add(std::string(field.name_string()), std::string(field.value()));
  }
  request.body = std::move(message.body());
  request.version = static_cast<int>(message.version());
  taken.keep_alive = message.keep_alive();
  taken.head = message.method() == bhttp::verb::head;
  return taken;
}

}  // namespace internal

RequestParseResult ParseHttpRequest(std::string_view bytes, const RequestLimits& limits,
                                    size_t piece_bytes) {
  RequestParseResult result;
  auto refuse = [&result](const internal::Refusal& refusal) {
    result.outcome = RequestParseResult::Outcome::kRefused;
    result.status = refusal.status;
    result.message = std::string(refusal.message);
    return result;
  };
  internal::RequestParser parser;
  internal::SetRequestLimits(parser, limits);
  piece_bytes = std::max<size_t>(piece_bytes, 1);
  // As a connection reads: pieces arrive in a buffer, the parser takes what
  // it can, the rest waits for more (a header is bounded below as the
  // server bounds it; body bytes are taken as they come).
  std::string pending;
  size_t fed = 0;
  size_t consumed = 0;
  bool header_done = false;
  while (true) {
    size_t used = 0;
    if (!pending.empty()) {
      boost::system::error_code ec;
      used = parser.put(boost::asio::buffer(pending.data(), pending.size()), ec);
      if (ec == boost::beast::http::error::need_more) ec = {};
      if (ec) {
        std::optional<internal::Refusal> refusal =
            header_done ? internal::RefuseBody(ec) : internal::RefuseHeader(ec);
        return refuse(refusal.value_or(internal::Refusal{400, "malformed HTTP request"}));
      }
      pending.erase(0, used);
      consumed += used;
      // As the server counts (server.cc): before the header's end, every
      // byte held, taken or waiting, is header; not ended in max bytes is
      // over max (as Beast refuses a full window without an end).
      if (!parser.is_header_done() && consumed + pending.size() >= limits.max_header_bytes) {
        return refuse(internal::Refusal{431, "request header fields too large"});
      }
    }
    if (!header_done && parser.is_header_done()) {
      header_done = true;
      result.expects_continue = internal::ExpectsContinue(parser);
      // The parser is not eager: the put that ended the header consumed
      // no body bytes, so `consumed` is the header's size.
      if (auto refusal = internal::RefuseParsedHeader(parser, consumed, limits)) {
        return refuse(*refusal);
      }
    }
    if (parser.is_done()) {
      internal::TakenRequest taken = internal::TakeRequest(parser);
      result.outcome = RequestParseResult::Outcome::kComplete;
      result.request = std::move(taken.request);
      result.keep_alive = taken.keep_alive;
      result.consumed = consumed;
      return result;
    }
    if (used > 0 && !pending.empty()) continue;  // The parser may take more of what it has.
    if (fed == bytes.size()) return result;      // kIncomplete.
    const size_t n = std::min(piece_bytes, bytes.size() - fed);
    pending.append(bytes.substr(fed, n));
    fed += n;
  }
}

}  // namespace swiftlet::http
