// Internal to http/: one TCP connection that carries either plain bytes or
// TLS, decided when it is made. The server's connections, the WebSocket
// sessions and the HTTP client read and write through it, so Beast's
// parsers and its WebSocket stream are compiled once for both (a template
// per transport would double the cost of the slowest files to compile).
// Names Asio's socket and ssl types: only http/ .cc files that already
// compile asio include it.
//
// Threads: as an asio socket (one strand at a time). Through TLS, as for
// Asio's ssl::stream: one read and one write may be pending at once.
#pragma once

#include <memory>
#include <utility>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>

#include "http/tls_context.h"

namespace swiftlet::http::internal {

class NetStream {
 public:
  using executor_type = boost::asio::ip::tcp::socket::executor_type;

  // Plain, not yet connected.
  explicit NetStream(const executor_type& executor) : socket_(executor) {}
  // Plain, over a connected socket.
  explicit NetStream(boost::asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}
  // TLS over `socket` (connected or not) with `context`, which the stream
  // keeps alive. The handshake is the owner's to run (tls()).
  NetStream(boost::asio::ip::tcp::socket socket, std::shared_ptr<SslContext> context)
      : socket_(socket.get_executor()),
        context_(std::move(context)),
        tls_(std::make_unique<TlsStream>(std::move(socket), *context_)) {}

  NetStream(NetStream&&) = default;
  NetStream& operator=(NetStream&&) = default;

  executor_type get_executor() { return socket_.get_executor(); }

  // The TCP socket under everything (options, shutdown, close, cancel).
  boost::asio::ip::tcp::socket& socket() { return tls_ ? tls_->next_layer() : socket_; }

  bool is_tls() const { return tls_ != nullptr; }
  TlsStream& tls() { return *tls_; }

  // The connection will not speak TLS after all: before any TLS byte was
  // read or written (the server found a plain HTTP request instead of a
  // ClientHello), the socket goes back to plain use.
  void DropTls() {
    if (!tls_) return;
    socket_ = std::move(tls_->next_layer());
    tls_.reset();
    context_.reset();
  }

  // AsyncReadStream / AsyncWriteStream, for asio and Beast. A run-time
  // branch per call: the composed operations above are instantiated once.
  template <class MutableBuffers, class Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    } else {
      socket_.async_read_some(buffers, std::forward<Handler>(handler));
    }
  }

  template <class ConstBuffers, class Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    } else {
      socket_.async_write_some(buffers, std::forward<Handler>(handler));
    }
  }

 private:
  boost::asio::ip::tcp::socket socket_;  // Unused (never opened) under TLS.
  std::shared_ptr<SslContext> context_;  // Outlives tls_'s SSL object.
  std::unique_ptr<TlsStream> tls_;
};

}  // namespace swiftlet::http::internal
