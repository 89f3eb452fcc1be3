// Internal to http/: the steps of reading one request with Beast's parser
// that the server's connections (server.cc, reading from a socket) and
// ParseHttpRequest (request_parser.h, from bytes) share, so the fuzzed path
// is the served one. Names Beast's parser: only http/ .cc files that
// already compile Beast include it.
#pragma once

#include <optional>
#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/message.h"
#include "http/request_parser.h"

namespace swiftlet::http::internal {

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// What the server answers instead of handing a request on; then it closes.
struct Refusal {
  int status;
  std::string_view message;
};

// A fresh parser with the limits set.
void SetRequestLimits(RequestParser& parser, const RequestLimits& limits);

// After reading the header failed with `ec`: the answer, or nullopt when
// `ec` is not the client's fault to be told about (end of stream, a reset,
// a timeout: the connection just closes).
std::optional<Refusal> RefuseHeader(const boost::system::error_code& ec);
// After a header that parsed in `header_bytes` bytes (what the parser
// consumed up to the header's end): a header over the limit, or a declared
// body over the limit. Beast applies its header limit to the start line and
// to the fields separately when both are in the buffer at once, so a header
// of up to twice the limit can pass it when it arrives whole and not when it
// arrives in pieces; counting here makes the answer not depend on the reads.
std::optional<Refusal> RefuseParsedHeader(const RequestParser& parser, size_t header_bytes,
                                          const RequestLimits& limits);
// After reading the body failed with `ec`; nullopt as for RefuseHeader.
std::optional<Refusal> RefuseBody(const boost::system::error_code& ec);

// The header asks for "Expect: 100-continue".
bool ExpectsContinue(const RequestParser& parser);

struct TakenRequest {
  HttpRequest request;  // remote_address and received_ns are the caller's.
  bool keep_alive = false;
  bool head = false;  // A HEAD request: the answer has no body.
};

// The finished message, moved out of `parser` (which is then spent).
TakenRequest TakeRequest(RequestParser& parser);

}  // namespace swiftlet::http::internal
