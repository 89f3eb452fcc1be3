// Asynchronous HTTP/1.1 client for one server (host:port; http or https), built for the
// load generator: many concurrent requests on one I/O thread, keep-alive
// connection reuse, streamed responses with Server-Sent Events parsed as
// they arrive (chunked or not), and timeouts. Boost.Beast lives behind this
// header (client.cc only).
//
// Threads: the client owns one I/O thread. Send and Cancel may be called
// from any thread, including from inside a callback. Every callback of a
// request runs on the I/O thread, in this order: on_headers (once, if a
// response header arrived), on_event* (text/event-stream responses only),
// then on_done exactly once. Callbacks must be quick: they hold up every
// other request of this client.
//
// A request that fails on a reused keep-alive connection before any
// response byte arrived (the server closed it while idle) is retried once
// on a new connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "http/message.h"
#include "http/tls_options.h"

namespace swiftlet::http {

struct HttpClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  std::chrono::milliseconds connect_timeout{5'000};
  // Longest silence while waiting for response bytes (also for the send).
  std::chrono::milliseconds idle_timeout{30'000};
  // Whole request, stream included; 0: none.
  std::chrono::milliseconds request_timeout{0};
  size_t max_header_bytes = 64 << 10;
  size_t max_body_bytes = 64 << 20;         // Non-SSE bodies, kept whole.
  size_t max_event_bytes = 16 << 20;        // One SSE event.
  size_t max_idle_connections = 1024;       // Kept for reuse.
  // https when tls.use_tls: each new connection verifies the server's
  // certificate (chain and host name) in its handshake, which counts
  // towards connect_timeout; a failure ends the request with Unavailable
  // naming the reason. A CA file that does not load fails every request
  // with its error (CheckTlsClientOptions says so up front).
  TlsClientOptions tls;
};

struct ClientRequest {
  std::string method = "POST";
  std::string target = "/";
  Headers headers;   // Content-Type defaults to application/json when a body is sent.
  std::string body;
};

struct ClientResponse {
  int status = 0;           // 0 if no response header arrived.
  Headers headers;
  std::string body;         // Whole body, unless it was an event stream.
  size_t events = 0;        // SSE events delivered.
  bool reused_connection = false;
};

struct ClientCallbacks {
  std::function<void(int status, const Headers& headers)> on_headers;
  // The data of each SSE event (the lines joined by \n).
  std::function<void(std::string_view data)> on_event;
  // OK when the whole response arrived (whatever its HTTP status).
  // Otherwise: DeadlineExceeded (a timeout), Cancelled (Cancel or client
  // destroyed), Unavailable (connect or connection failure),
  // ResourceExhausted (a size limit), InvalidArgument (malformed response).
  std::function<void(absl::Status status, ClientResponse response)> on_done;
};

class HttpClient {
 public:
  explicit HttpClient(HttpClientOptions options);
  // Cancels what is in flight (on_done gets Cancelled) and joins the thread.
  ~HttpClient();

  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Starts a request; returns its id for Cancel.
  uint64_t Send(ClientRequest request, ClientCallbacks callbacks);

  // Aborts a request: its connection is closed (so the server sees the
  // client leave) and on_done gets Cancelled. Unknown or finished ids are
  // ignored.
  void Cancel(uint64_t id);

  // Connections open now, busy or idle (for tests). Thread-safe.
  size_t open_connections() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace swiftlet::http
