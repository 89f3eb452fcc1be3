// libFuzzer target for the server's request parsing (http/request_parser.h:
// Beast's parser with the server's limits and refusals, through the same
// helpers a connection reads with). For any bytes:
//   - parsing never crashes, and whether the bytes hold an acceptable
//     request, and then every part of it, is the same whether they arrive
//     whole, one byte at a time, or in pieces of 7 (as socket reads may
//     split them). Among bytes that are not an acceptable request, three
//     differences are Beast's look-ahead and allowed (each found by this
//     target, see SameResult): refused whole but still waiting in pieces;
//     waiting whole but refused as too large (413/431) in pieces; and
//     refused for a malformed byte (400) whole but as too large (413/431)
//     in pieces, the limit reached before that byte was looked at;
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
// What may, among bytes that are not an acceptable request:
//   - refused whole, still waiting for more in pieces: a bare CR ending a
//     piece is not looked at again while Beast searches for the header's
//     end ("Version: \r13\n\r\n"); the server answers when the header
//     ends or with 408 at header_timeout;
//   - waiting whole, refused as too large (413/431) in pieces: a chunked
//     body whose chunk lines Beast takes loosely, refused in single bytes;
//   - refused 400 whole, 413/431 in pieces: a limit reached while Beast
//     looks ahead for a line's end, before the malformed byte it would
//     have found (a bad version byte in a 1 KiB header).
bool SameResult(const RequestParseResult& whole, const RequestParseResult& split) {
  const RequestParseResult& a = whole;
  const RequestParseResult& b = split;
  if (a.outcome == Outcome::kComplete || b.outcome == Outcome::kComplete) {
    return a.outcome == b.outcome && a.keep_alive == b.keep_alive && a.consumed == b.consumed &&
           SameRequest(a.request, b.request);
  }
  auto is_limit = [](int status) { return status == 413 || status == 431; };
  if (a.outcome == Outcome::kIncomplete && b.outcome == Outcome::kIncomplete) return true;
  if (a.outcome == Outcome::kRefused && b.outcome == Outcome::kIncomplete) return true;
  if (a.outcome == Outcome::kIncomplete) return is_limit(b.status);
  return a.status == b.status || (a.status == 400 && is_limit(b.status));
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
