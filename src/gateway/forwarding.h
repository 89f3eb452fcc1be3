// What the gateway changes in messages it relays, as plain functions (no
// state, thread-safe): hop-by-hop fields out, X-Forwarded-For and
// x-swiftlet-site in, the Retry-After a site asks for, the stream id a live
// stream carries, and the gateway's own error answers in OpenAI's shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "http/message.h"

namespace swiftlet::gateway {

inline constexpr std::string_view kSiteHeader = "x-swiftlet-site";

// The client's request fields as sent on to a site: without hop-by-hop
// fields (Connection and those it names, Keep-Alive, TE, Trailer,
// Transfer-Encoding, Upgrade, Proxy-*), Host, Content-Length and Expect
// (the client sets its own), with the client's address appended to
// X-Forwarded-For.
http::Headers UpstreamRequestHeaders(const http::HttpRequest& request);

// The fields of a WebSocket upgrade sent on to a site: the same, minus the
// handshake's own fields (the WebSocket client writes those).
http::Headers UpstreamUpgradeHeaders(const http::HttpRequest& request);

// A site's response fields as passed to the client: without hop-by-hop
// fields, Content-Length and Transfer-Encoding (the gateway frames its own
// response), with x-swiftlet-site: `site` (replacing one from the site).
http::Headers DownstreamResponseHeaders(const http::Headers& upstream, std::string_view site);

// How long a 429 asks to be left alone: swiftlet's retry-after-ms if
// present and valid, else Retry-After in whole seconds; an HTTP date or
// garbage counts as 1 s. Nullopt if neither field is there.
std::optional<int64_t> RetryAfterNs(const http::Headers& headers);

// The top-level string "stream_id" of a JSON request body (as POST
// /v1/translate carries it), found without building the document; nullopt
// if absent, not a string, too long, or the body is not JSON.
std::optional<std::string> StreamIdFromBody(std::string_view body);

// The `stream_id` query parameter (percent-decoded), as a live translation
// stream's URL may carry it; nullopt if absent, empty, malformed or too long.
std::optional<std::string> StreamIdFromQuery(std::string_view query);

// An error answer of the gateway's own, in OpenAI's shape.
std::string ErrorJson(int http_status, std::string_view message, std::string_view code);

// The event that ends an SSE stream which broke after its first byte: an
// OpenAI-shaped error object as the event's data (the openai SDKs raise it).
std::string StreamErrorEventData(std::string_view message);

}  // namespace swiftlet::gateway
