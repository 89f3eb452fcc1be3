// WebSocket connections (RFC 6455, text messages only) for live streams.
// The server side accepts them through ResponseWriter::AcceptWebSocket
// (http/response_writer.h); the client side opens them with
// WebSocketClient (http/websocket_client.h). Both hand the application a
// WebSocket. Boost.Beast lives behind these headers
// (websocket_session.cc only). Neither permessage-deflate nor a
// subprotocol (Sec-WebSocket-Protocol) is ever negotiated.
//
// Every incoming frame is untrusted: a message over max_message_bytes
// closes with 1009, a binary message with 1003, text that is not UTF-8
// with 1007, any other protocol violation with 1002; a peer silent past the
// ping deadline is dropped. None of these allocates more than
// max_message_bytes plus a small read buffer.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include "http/message.h"

namespace swiftlet::http {

// Close codes (RFC 6455 section 7.4.1) that this library sends or reports.
namespace websocket_close {
inline constexpr int kNormal = 1000;
inline constexpr int kGoingAway = 1001;        // Server Stop, client destroyed.
inline constexpr int kProtocolError = 1002;
inline constexpr int kUnsupportedData = 1003;  // A binary message.
inline constexpr int kNoStatus = 1005;         // Reported: the peer's close frame had no code.
inline constexpr int kAbnormal = 1006;         // Reported: ended without a close handshake.
inline constexpr int kInvalidPayload = 1007;   // Text that is not UTF-8.
inline constexpr int kPolicyViolation = 1008;  // The send buffer passed its hard limit.
inline constexpr int kMessageTooBig = 1009;
inline constexpr int kInternalError = 1011;
}  // namespace websocket_close

// A code an endpoint may put in a close frame: 1000-1003, 1007-1014,
// 3000-4999.
bool IsSendableCloseCode(int code);

// True when `request` is a well-formed WebSocket opening handshake (GET,
// HTTP/1.1, Host, "Upgrade: websocket", "Connection: upgrade", a 16-byte
// Sec-WebSocket-Key, Sec-WebSocket-Version 13). Only then may a handler
// accept it; other requests, on the same route too, are answered normally.
bool IsWebSocketUpgrade(const HttpRequest& request);
// Why IsWebSocketUpgrade is false, for the refusal's message ("no
// \"Upgrade: websocket\" field", "Sec-WebSocket-Version must be 13", ...);
// empty when it is true. The text is static.
std::string_view WebSocketUpgradeProblem(const HttpRequest& request);

struct WebSocketOptions {
  // An incoming message larger than this (all fragments together) closes
  // the connection with 1009. At least 1.
  size_t max_message_bytes = 64 << 10;
  // A ping goes out every ping_interval; a peer from which nothing at all
  // (a pong or any other frame) arrived during the interval after a ping is
  // dropped without a close frame (on_close reports 1006). So a silent peer
  // is cut off after one to two intervals. Pings cannot be turned off (a
  // value under 1 ms counts as 1 ms): the same timer bounds the closing
  // handshakes that Beast runs by itself (answering the peer's close frame,
  // failing a bad frame), which a peer could otherwise hold open.
  std::chrono::milliseconds ping_interval{15'000};
  // Server: writing the 101 answer. Client: resolving, connecting and the
  // whole upgrade exchange.
  std::chrono::milliseconds handshake_timeout{5'000};
  // Once this side has decided to close: how long the queued messages, the
  // close frame and the peer's close reply may take before the TCP
  // connection is dropped anyway.
  std::chrono::milliseconds close_timeout{2'000};
  // Send buffer (payload bytes queued and not yet taken by the socket), see
  // WebSocket::SendText.
  size_t send_soft_limit = 256 << 10;
  size_t send_hard_limit = 4 << 20;
};

// One open (or opening) WebSocket connection, as the application holds it.
//
// Threads: every method may be called from any thread (an engine thread, a
// worker, a handler) and never blocks; calls are queued onto the
// connection's I/O strand in the order they return.
//
// Lifetime: handed out as a shared_ptr. Releasing every copy while the
// connection is open closes it with 1000. The connection's handlers are
// released after on_close has run, so they may hold the WebSocket.
class WebSocket {
 public:
  virtual ~WebSocket() = default;

  // Queues one text message (UTF-8; a peer closes on anything else).
  // Messages queued before the handshake completes go out after it.
  // True: queued, and the send buffer is within its soft limit. False: one
  // of three, told apart by closed():
  //   - queued, but the buffer is past the soft limit: slow down, or drop
  //     optional output (closed() false);
  //   - not queued: the socket is closing or closed (closed() true);
  //   - not queued: it would have passed the hard limit. The connection then
  //     closes with 1008 at once, dropping what is still queued (closed()
  //     true).
  virtual bool SendText(std::string text) = 0;

  // Starts the closing handshake after the messages already queued, with
  // `code` (IsSendableCloseCode, else 1000 is sent) and `reason` (cut to 123
  // bytes on a UTF-8 boundary). Later sends are refused; on_close follows
  // when the peer answers or close_timeout passes. Ignored once closed.
  virtual void Close(int code = websocket_close::kNormal, std::string reason = "") = 0;

  // True once Close was called, the hard send limit was passed, or the
  // connection ended: SendText does nothing from then on.
  virtual bool closed() const = 0;

  // Payload bytes queued and not yet written to the socket.
  virtual size_t buffered_bytes() const = 0;
};

// What a server handler gives AcceptWebSocket.
struct WebSocketHandlers {
  // Each text message, whole, on an I/O thread; serialized per connection
  // and in arrival order. Must be quick (the connection reads nothing
  // meanwhile) and must not throw. It may call the WebSocket's methods.
  // Messages that arrive after this side started to close are dropped.
  std::function<void(std::string text)> on_message;
  // Exactly once, on an I/O thread, when the connection has ended, whatever
  // ended it. `code` and `reason`: those of the peer's close frame if the
  // peer closed first (1005 if it sent no code); this side's if it closed
  // first (Close, a limit, a binary message, the server's Stop with 1001);
  // 1006 if the connection ended without a close handshake (the peer
  // vanished, a ping or handshake timeout).
  std::function<void(int code, std::string reason)> on_close;
};

}  // namespace swiftlet::http
