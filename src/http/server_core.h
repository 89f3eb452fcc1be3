// Internal to http/: what the listener (server_listener.cc: the accept
// loop, Start, Stop, TLS reload) and the connections (server.cc, Beast's
// side) share. Names asio's types: only http/ .cc files that already
// compile asio include it.
//
// Lifetime: connections hold the ServerCore (io_context included), so asio
// objects never outlive their io_context.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "http/exchange.h"
#include "http/server.h"
#include "http/tls_context.h"
#include "http/tls_stream.h"
#include "http/wire_format.h"

namespace swiftlet::http::internal {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

// One accepted connection as the listener drives it. Start, Drain and
// Close run on the connection's strand (Post there first).
class ServerConnection : public ConnectionPort {
 public:
  // Begins reading (after the TLS handshake on a TLS port).
  virtual void Start() = 0;
  // Server shutdown: nothing more after the current response; an idle
  // connection closes now. A WebSocket goes on until Close.
  virtual void Drain() = 0;
  // Closes now (a WebSocket with 1001, shortly).
  virtual void Close() = 0;
};

struct ServerCore {
  ServerCore(HttpServerOptions o, HttpHandler h) : options(std::move(o)), handler(std::move(h)) {}

  ErrorBody ErrorBodyFor(int status, std::string_view message) const {
    return options.error_body ? options.error_body(status, message) : PlainErrorBody(status, message);
  }

  const HttpServerOptions options;
  const HttpHandler handler;
  boost::asio::io_context ioc;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work;
  std::optional<boost::asio::ip::tcp::acceptor> acceptor;      // On its own strand.
  std::optional<boost::asio::steady_timer> retry;    // Accept back-off, same strand.
  std::vector<std::thread> threads;
  std::atomic<bool> draining{false};

  // Shared by every Post; exclusive once, when the server is destroyed.
  std::shared_mutex post_mu;
  bool posts_closed = false;

  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<uint64_t, std::weak_ptr<ServerConnection>> open;  // Guarded by mu.
  uint64_t next_id = 1;                                           // Guarded by mu.

  // Null: plain HTTP. ReloadTls swaps in a new one; each connection keeps
  // the context it was accepted with.
  std::shared_ptr<SslContext> TlsContext() {
    std::lock_guard lock(tls_mu);
    return tls;
  }
  std::mutex tls_mu;
  std::shared_ptr<SslContext> tls;  // Guarded by tls_mu.
  TlsServerOptions tls_options;     // Guarded by tls_mu: what ReloadTls() reads again.

  size_t OpenCount() {
    std::lock_guard lock(mu);
    return open.size();
  }
  void Unregister(uint64_t id) {
    std::lock_guard lock(mu);
    open.erase(id);
    cv.notify_all();
  }
};


// server.cc: a connection over `stream` (plain, or TLS before its
// handshake). The caller registers it in core->open under `id` and posts
// Start to `strand`.
std::shared_ptr<ServerConnection> MakeServerConnection(std::shared_ptr<ServerCore> core, Strand strand,
                                                       NetStream stream, uint64_t id);

}  // namespace swiftlet::http::internal
