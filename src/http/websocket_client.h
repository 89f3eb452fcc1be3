// Asynchronous WebSocket client for many connections to one server
// (host:port; ws:// or wss://), built for the load generator and the tests: one I/O thread
// runs every connection (hundreds at once are fine), each connection is a
// WebSocket (http/websocket.h) with the same send buffer, limits, pings and
// close rules as the server's. Boost.Beast lives behind this header.
//
// Threads: Connect may be called from any thread, including from inside a
// callback, and so may the returned WebSocket's methods. Every callback of
// a connection runs on the I/O thread, in this order: on_open (once, if
// the upgrade succeeded), on_message*, then on_close exactly once. Callbacks
// must be quick: they hold up every other connection of this client.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "http/message.h"
#include "http/tls_options.h"
#include "http/websocket.h"

namespace swiftlet::http {

struct WebSocketClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  // Every connection's limits and timers. handshake_timeout covers
  // resolving, connecting and the upgrade exchange. A server that pings
  // keeps the connection checked; the client's own ping_interval may then
  // be long.
  WebSocketOptions socket;
  // wss:// when tls.use_tls (the TLS handshake counts towards
  // handshake_timeout). A CA file that does not load fails every
  // connection with its error (CheckTlsClientOptions says so up front).
  TlsClientOptions tls;
};

// How one client connection ended.
struct WebSocketClientClose {
  // As WebSocketHandlers::on_close says (1006 when it never opened).
  int code = websocket_close::kAbnormal;
  std::string reason;
  // OK when a close handshake completed, whoever began it. Otherwise:
  // FailedPrecondition (the server refused the upgrade: see http_status),
  // DeadlineExceeded (handshake, ping or close timeout), Unavailable
  // (connect failed, connection lost), ResourceExhausted (a message over
  // max_message_bytes), InvalidArgument (the server broke the protocol),
  // Cancelled (closed before it opened).
  absl::Status status;
  int http_status = 0;    // Of the upgrade answer: 101 once open; 0 if none arrived.
  std::string http_body;  // The body of a refused upgrade.
};

struct WebSocketClientHandlers {
  // The upgrade succeeded; `headers` are the 101's.
  std::function<void(const Headers& headers)> on_open;
  // Each text message, whole, in arrival order.
  std::function<void(std::string text)> on_message;
  std::function<void(const WebSocketClientClose& close)> on_close;
};

class WebSocketClient {
 public:
  explicit WebSocketClient(WebSocketClientOptions options);
  // Closes every connection still open with 1001 (each gets up to a second,
  // or its close_timeout, for the close handshake; every on_close runs),
  // then joins the I/O thread. WebSockets may outlive the client; their
  // calls then do nothing.
  ~WebSocketClient();

  WebSocketClient(const WebSocketClient&) = delete;
  WebSocketClient& operator=(const WebSocketClient&) = delete;

  // Opens a connection for `target` (path and query, as sent:
  // "/v1/translate/stream?languages=en,ja&budget_ms=800") with the extra
  // request `headers` (Origin, Authorization, ...; the handshake's own
  // fields cannot be overridden). Returns at once; messages sent before
  // on_open are queued and go out after it.
  std::shared_ptr<WebSocket> Connect(std::string target, Headers headers,
                                     WebSocketClientHandlers handlers);

  // Connections not yet ended (connecting, open or closing). Thread-safe.
  size_t open_connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace swiftlet::http
