// HTTP/1.1 server: keep-alive, request limits and timeouts, chunked and
// SSE streaming through ResponseWriter, bounded send buffers, graceful
// shutdown. Boost.Beast lives behind this header (server.cc only).
//
// Threads: `io_threads` threads run every connection; each connection's
// work is serialized on its own strand. The handler is called on an I/O
// thread and must return quickly (hand model work to the engine; answer
// through the writer from any thread later); it must not throw. Start,
// Stop and the destructor are called from one non-I/O thread (never from a
// handler).
//
// Per request, in order: wait for the first byte (idle_timeout on a kept-
// alive connection, header_timeout on a new one); the request line and
// headers must then arrive within header_timeout and fit max_header_bytes
// (else 431 and close); the body within body_timeout and max_body_bytes
// (a declared Content-Length over the limit gets 413 at once, before the
// body is read; a chunked body that grows past it, 413 when it does). A
// request whose header or body does not arrive in time gets 408 and the
// connection closes; a connection that times out between requests just
// closes. Malformed requests get 400 and close.
// "Expect: 100-continue" is answered. Past max_connections, a new
// connection gets a 503 and is closed.
//
// With options.tls enabled the server speaks only HTTPS (tls_options.h
// says which versions and ciphers): the TLS handshake must finish within
// header_timeout of the connection's start, and the limits and timeouts
// above then apply to the requests inside it as they do without TLS;
// WebSocket upgrades run over the same TLS connection (wss). A plain HTTP
// request sent to a TLS port gets a plain-text 400 and is closed. Past
// max_connections a TLS port closes new connections without an answer.
//
// While a handler runs the connection keeps reading, so a client that goes
// away is noticed at once (writer OnClose); a client that half-closes its
// side after the request counts as gone too.
//
// WebSocket: a handler may turn a request into a WebSocket with
// ResponseWriter::AcceptWebSocket (http/websocket.h). The socket then
// belongs to the WebSocket, with its own limits and timers
// (WebSocketOptions) instead of the ones above; it still counts as an open
// connection (max_connections, open_connections) until its TCP connection
// is closed.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "http/message.h"
#include "http/response_writer.h"
#include "http/tls_options.h"
#include "http/wire_format.h"

namespace swiftlet::http {
namespace internal {
struct ServerCore;
}  // namespace internal

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0: an ephemeral port, see HttpServer::port()
  int io_threads = 2;
  size_t max_connections = 10000;
  size_t max_header_bytes = 16 << 10;  // Request line and header fields.
  size_t max_body_bytes = 8 << 20;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds idle_timeout{60'000};   // Keep-alive wait for the next request.
  std::chrono::milliseconds write_timeout{30'000};  // A write the peer does not take.
  // Send buffer per response (see ResponseWriter).
  size_t send_soft_limit = 256 << 10;
  size_t send_hard_limit = 4 << 20;
  // After an error answer (413, 431, ...) the server reads and discards up
  // to this much for this long before closing, so the client sees the
  // answer instead of a reset.
  size_t linger_bytes = 256 << 10;
  std::chrono::milliseconds linger_timeout{1'000};
  // The body of the transport's own error answers (400, 413, 431, 503, and
  // 500 when a handler drops its writer); null: plain text. Called on I/O
  // threads; must not throw.
  ErrorBodyFn error_body;
  // HTTPS when tls.enabled(): the certificate and key are loaded at Start
  // (an error then fails Start) and again at ReloadTls.
  TlsServerOptions tls;
};

using HttpHandler =
    std::function<void(HttpRequest request, std::shared_ptr<ResponseWriter> writer)>;

class HttpServer {
 public:
  HttpServer(HttpServerOptions options, HttpHandler handler);
  // Stop(0) if still running. ResponseWriters may outlive the server; their
  // calls then return false.
  ~HttpServer();

  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and listens, then starts the I/O threads. Error if the address
  // cannot be bound or Start was called before.
  absl::Status Start();

  // The bound port (the ephemeral one when options.port is 0). After Start.
  uint16_t port() const { return port_; }

  // Graceful shutdown, blocking up to about `grace`: stops accepting; idle
  // keep-alive connections close; a request that completes meanwhile gets
  // 503; in-flight responses may finish (then their connections close);
  // WebSockets stay open. At the deadline the rest are closed, which runs
  // their writers' OnClose callbacks; WebSockets are closed with 1001 and
  // get up to a second (or their close_timeout, if shorter) for the close
  // handshake, then their on_close runs. Then the I/O threads are joined.
  // Idempotent.
  void Stop(std::chrono::milliseconds grace);

  // Open connections now (for tests and metrics). Thread-safe.
  size_t open_connections() const;

  // Certificate rotation without dropping a connection: reads the
  // certificate and key again (the files options.tls named, or those of the
  // last ReloadTls(options)); new connections then handshake with them,
  // while connections already open keep the session they have. On error
  // (unreadable file, key not matching) the certificate in use stays and
  // the error says why. FailedPrecondition when the server was started
  // without TLS. Any thread, after Start (a SIGHUP handler's thread, say).
  absl::Status ReloadTls();
  absl::Status ReloadTls(const TlsServerOptions& options);

 private:
  std::shared_ptr<internal::ServerCore> core_;
  uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace swiftlet::http
