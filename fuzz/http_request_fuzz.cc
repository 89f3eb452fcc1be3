// libFuzzer target for the server's request parsing (http/request_parser.h:
// Beast's parser with the server's limits and refusals, through the same
// helpers a connection reads with). For any bytes:
//   - parsing never crashes, and the outcome (complete, incomplete, or the
//     refusal's status) and a complete request are the same whether the
//     bytes arrive whole, one byte at a time, or in pieces of 7 (as socket
//     reads may split them). One difference is Beast's and allowed: a bare
//     CR that ends a piece is not looked at again while Beast searches for
//     the header's end, so bytes that arrive split may still be waiting
//     for more where the whole bytes were refused (the server then answers
//     when the header ends, or with 408 at header_timeout; found by this
//     target, "Version: \r13\n\r\n"); and, for the same reason, split
//     bytes may be refused as too large (431) where the whole bytes were
//     refused for what their start line holds;
//   - a refusal is 400, 413 or 431 with a message;
//   - a complete request has a method and a target, path + "?" + query is
//     the target, its body is within the limit, and it took no more bytes
//     than were given.
// Any violation aborts. No Boost in this file: the parser is behind the
// plain header.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "http/message.h"
#include "http/request_parser.h"
#include "http/websocket.h"

namespace {

using swiftlet::http::HttpRequest;
using swiftlet::http::ParseHttpRequest;
using swiftlet::http::RequestLimits;
using swiftlet::http::RequestParseResult;
using Outcome = RequestParseResult::Outcome;

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "http_request_fuzz: %s\n", what);
  std::abort();
}

bool SameRequest(const HttpRequest& a, const HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.path == b.path && a.query == b.query &&
         a.body == b.body && a.version == b.version && a.headers.fields() == b.headers.fields();
}

// `split` parsed the bytes of `whole` in pieces. What must not depend on
// the reads: whether a request is accepted, and then every part of it.
// What may: among bytes that are not an acceptable request, whether the
// parser refuses them now or waits for more (the server's timeouts close a
// connection that waits), and a limit reached while Beast looks ahead for
// the end of a line versus the malformed byte it would have found there
// (found by this target: a bad version byte in a 1 KiB header, 400 whole
// and 431 in pieces; a chunked body Beast waits on whole and refuses 413
// in single bytes).
bool SameResult(const RequestParseResult& whole, const RequestParseResult& split) {
  const RequestParseResult& a = whole;
  const RequestParseResult& b = split;
  if (a.outcome == Outcome::kComplete || b.outcome == Outcome::kComplete) {
    return a.outcome == b.outcome && a.keep_alive == b.keep_alive && a.consumed == b.consumed &&
           SameRequest(a.request, b.request);
  }
  if (a.outcome != Outcome::kRefused || b.outcome != Outcome::kRefused) return true;
  auto is_limit = [](int status) { return status == 413 || status == 431; };
  return a.status == b.status || is_limit(a.status) || is_limit(b.status);
}

void Check(const RequestParseResult& r, const RequestLimits& limits, size_t size) {
  if (r.outcome == Outcome::kRefused) {
    if ((r.status != 400 && r.status != 413 && r.status != 431) || r.message.empty()) {
      Fail("a refusal other than 400, 413 or 431, or without a message");
    }
    return;
  }
  if (r.outcome != Outcome::kComplete) return;
  const HttpRequest& q = r.request;
  if (q.method.empty() || q.target.empty()) Fail("a request without a method or target");
  const std::string joined = q.query.empty() && q.target.find('?') == std::string::npos
                                 ? q.path
                                 : q.path + "?" + q.query;
  if (joined != q.target) Fail("path and query do not make the target");
  if (q.body.size() > limits.max_body_bytes) Fail("a body over the limit was accepted");
  if (r.consumed == 0 || r.consumed > size) Fail("consumed more bytes than given");
  if (q.version != 10 && q.version != 11) Fail("a version other than 1.0 or 1.1");
  // What a handler does first with a request.
  (void)swiftlet::http::IsWebSocketUpgrade(q);
  (void)q.headers.Get("content-type");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Small limits, so inputs of a few KiB reach them.
  RequestLimits limits;
  limits.max_header_bytes = 1024;
  limits.max_body_bytes = 2048;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  RequestParseResult whole = ParseHttpRequest(bytes, limits, size + 1);
  Check(whole, limits, size);
  for (size_t piece : {size_t{1}, size_t{7}}) {
    RequestParseResult split = ParseHttpRequest(bytes, limits, piece);
    if (!SameResult(whole, split)) {
      std::fprintf(stderr, "whole: outcome %d status %d (%s); in pieces of %zu: outcome %d status %d (%s)\n",
                   static_cast<int>(whole.outcome), whole.status, whole.message.c_str(), piece,
                   static_cast<int>(split.outcome), split.status, split.message.c_str());
      Fail("parsing in pieces gives another result than parsing the whole");
    }
  }
  return 0;
}
