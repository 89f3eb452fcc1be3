// How a handler answers one HTTP request: a whole response, or a stream
// (chunked transfer encoding, optionally framed as Server-Sent Events).
//
// Threads: every method may be called from any thread (an engine thread, a
// worker); calls are queued onto the connection's strand in the order they
// return. Nothing blocks. The writer is handed out as a shared_ptr and may
// be kept after the handler returns; releasing every copy without
// finishing the response (Respond or End) answers 500 if nothing was sent
// yet, and otherwise closes the connection.
//
// Order: exactly one of Respond(...) or StartStream(...) → Write/WriteEvent*
// → End(). A call out of order, or after the connection closed, returns
// false and does nothing.
//
// Backpressure: bytes queued but not yet taken by the socket count against
// the connection's send buffer. Write/WriteEvent return false once they
// exceed the soft limit (the data was still queued: slow down, or drop
// optional output); a Write that would pass the hard limit is not queued,
// and the stream is cancelled: the connection closes, cancelled() turns
// true and OnClose callbacks run.
//
// WebSocket: a request for which IsWebSocketUpgrade (http/websocket.h) is
// true may be accepted with AcceptWebSocket instead of answered, or refused
// with an ordinary Respond (403 for a foreign Origin, 400 for a bad query).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "http/message.h"
#include "http/websocket.h"

namespace swiftlet::http {

class ResponseWriter {
 public:
  virtual ~ResponseWriter() = default;

  // A complete response with Content-Length. The server owns
  // Content-Length, Transfer-Encoding and Connection; handler copies of
  // those, and fields with CR/LF in them, are dropped.
  virtual bool Respond(int status, Headers headers, std::string body) = 0;

  // Sends the status line and headers now; the body follows in chunks. For
  // SSE, pass Content-Type: text/event-stream (and Cache-Control: no-cache).
  virtual bool StartStream(int status, Headers headers) = 0;

  // One chunk of the body (empty data is a no-op returning true).
  // True: queued, under the soft limit. False: see the class comment;
  // cancelled() tells "slow down" from "gone".
  virtual bool Write(std::string_view data) = 0;

  // Write of one SSE event: "data: <line>\n" per line of `data`, then "\n".
  virtual bool WriteEvent(std::string_view data) = 0;

  // Ends the stream (the last chunk). The connection is then reused or
  // closed by the server.
  virtual bool End() = 0;

  // `callback` runs exactly once if the connection closes before the
  // response was finished (client went away, a timeout, the hard send
  // limit, server shutdown), and never otherwise. It runs on an I/O thread,
  // or at once on the calling thread if the connection has already closed;
  // it must be quick and must not block. Several callbacks may be added.
  virtual void OnClose(std::function<void()> callback) = 0;

  // True once the connection closed before the response was finished, or
  // the hard send limit cancelled the stream.
  virtual bool cancelled() const = 0;

  // Bytes queued for this response and not yet written to the socket.
  virtual size_t buffered_bytes() const = 0;

  // Accepts the request's WebSocket upgrade in place of a response: the
  // server answers 101 and the connection becomes the returned WebSocket
  // (still counted by HttpServer::open_connections and max_connections;
  // Stop closes it with 1001 at its deadline). Like the other calls, it may
  // come later and from any thread. This writer is finished by it: its
  // other calls return false and its OnClose callbacks never run;
  // `handlers.on_close` reports the end of the connection instead (also
  // when the client leaves before the 101 is written). Returns null and
  // leaves the writer as it was when the request is not a WebSocket
  // upgrade (see IsWebSocketUpgrade), so the handler can still answer it;
  // null too when the writer was already used or the client already left,
  // or once the server has been destroyed (no handler runs then). The
  // default (writers without a connection, as in tests) returns null.
  virtual std::shared_ptr<WebSocket> AcceptWebSocket(WebSocketOptions options,
                                                     WebSocketHandlers handlers) {
    (void)options;
    (void)handlers;
    return nullptr;
  }
};

}  // namespace swiftlet::http
