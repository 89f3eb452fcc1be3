// Internal to http/: the Beast side of one WebSocket connection, shared by
// the server (after an upgrade) and the client. This header names asio's
// socket and executor types, so only http/ .cc files that already compile
// asio include it (and fuzz/websocket_session_fuzz.cc, which drives one
// session alone); Beast itself stays in websocket_session.cc.
//
// Threads: a session lives on one strand (`executor`). The methods below,
// except Post and MakeWsSession, are called on that strand; every event
// runs there too. The application reaches the session only through its
// WebSocketHandle, which posts.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "absl/status/status.h"
#include "http/message.h"
#include "http/tls_stream.h"
#include "http/websocket.h"
#include "http/websocket_handle.h"

namespace swiftlet::http::internal {

// How a connection ended; reported once.
struct WsEnd {
  int code = websocket_close::kAbnormal;  // As WebSocketHandlers::on_close says.
  std::string reason;
  // OK when a close handshake completed (whoever began it). Otherwise why
  // not: DeadlineExceeded (a handshake, ping or close timeout), Unavailable
  // (connect failed, connection lost), ResourceExhausted (a message over the
  // limit), InvalidArgument (a protocol violation by the peer),
  // FailedPrecondition (the server refused the upgrade), Cancelled (closed
  // by this side before the connection opened).
  absl::Status status;
  int http_status = 0;    // Client: the upgrade answer's status; 0 if none arrived.
  std::string http_body;  // Client: the body of a refused upgrade.
};

struct WsEvents {
  std::function<void(const Headers& headers)> on_open;  // Client: the 101's fields.
  std::function<void(std::string text)> on_message;
  std::function<void(WsEnd end)> on_close;
};

class WsSession : public WsPort {
 public:
  // Server: takes over `stream` (plain or TLS, its handshake done), whose
  // upgrade request was already read (its `target` and `headers`), and
  // answers it with 101.
  virtual void Accept(NetStream stream, std::string target, Headers headers) = 0;
  // Client: resolves, connects and sends the upgrade request for `target`
  // with the application's `headers` (the handshake's own fields are set
  // by the session and win). With `tls` (null: plain ws) the connection is
  // wss: the server's certificate must verify and name `tls_name`; the
  // TLS handshake counts towards handshake_timeout.
  virtual void Connect(std::string host, uint16_t port, std::string target, Headers headers,
                       std::shared_ptr<SslContext> tls, std::string tls_name) = 0;
  // Ends a session that was never started (its connection went first):
  // on_close gets `code` and `reason`.
  virtual void Abort(int code, std::string reason) = 0;
  // Ends a session that was never started because of `error` (a client's
  // TLS set-up that did not load): on_close gets 1006 and it.
  virtual void Fail(absl::Status error) = 0;
  // Shutdown of the owner: close with 1001 now, dropping queued messages;
  // the TCP connection goes after at most `limit` (or close_timeout).
  virtual void GoAway(std::string reason, std::chrono::milliseconds limit) = 0;
};

struct WsSessionParts {
  std::shared_ptr<WsSession> session;  // The owner's (server connection, client).
  std::shared_ptr<WebSocket> handle;   // The application's.
};

// Runs work on the session's strand; false (work dropped) once the owner's
// I/O has shut down. It also keeps the owner's io_context alive.
using WsPostFn = std::function<bool(std::function<void()>)>;

// Any thread. `executor`: the strand the session runs on. `finished` runs
// on it right after on_close, for the owner's bookkeeping.
WsSessionParts MakeWsSession(const boost::asio::any_io_executor& executor, WsPostFn post,
                             WebSocketOptions options, WsEvents events,
                             std::function<void()> finished);

}  // namespace swiftlet::http::internal
