// The server's Beast side: the acceptor and one Connection per socket.
//
// A Connection's state lives on its strand. Its states, in the order a
// request goes through them:
//   kTls       TLS servers only: the first byte is peeked (a plain HTTP
//              request gets a plain 400), then the handshake; both timed
//              by header_timeout
//   kWaiting   no request bytes yet: a read for the first byte, timed by
//              idle_timeout (header_timeout before the first request)
//   kReading   header (header_timeout), then body (body_timeout)
//   kHandling  the handler has the request; a read stays pending to notice
//              a client that leaves; writes are timed by write_timeout
//   kAnswering an error answer is being written, then kLingering
//   kLingering send side shut; reading and discarding until the peer closes
//   kUpgrading the handler accepted a WebSocket upgrade: waiting for our
//              pending read (cancelled) and write to finish before the
//              socket moves to the WebSocket session
//   kWebSocket the session (websocket_session.cc) owns the socket; the
//              Connection stays registered, so the socket counts as open,
//              until the session reports that it has finished
//   kClosed
// Lifetime: handlers, timers and writers hold shared_ptr<Connection>, and
// the Connection holds the ServerCore (io_context included), so asio
// objects never outlive their io_context.
#include "http/server.h"

#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include "core/status.h"
#include "core/str_cat.h"
#include "http/exchange.h"
#include "http/tls_context.h"
#include "http/tls_stream.h"
#include "http/websocket_session.h"
#include "http/wire_format.h"

namespace swiftlet::http {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using Strand = asio::strand<asio::io_context::executor_type>;
using internal::Exchange;
using internal::NetStream;
using internal::Outgoing;
using internal::SslContext;

namespace {
class Connection;
}  // namespace

namespace internal {

struct ServerCore {
  ServerCore(HttpServerOptions o, HttpHandler h) : options(std::move(o)), handler(std::move(h)) {}

  ErrorBody ErrorBodyFor(int status, std::string_view message) const {
    return options.error_body ? options.error_body(status, message) : PlainErrorBody(status, message);
  }

  const HttpServerOptions options;
  const HttpHandler handler;
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::optional<tcp::acceptor> acceptor;      // On its own strand.
  std::optional<asio::steady_timer> retry;    // Accept back-off, same strand.
  std::vector<std::thread> threads;
  std::atomic<bool> draining{false};

  // Shared by every Post; exclusive once, when the server is destroyed.
  std::shared_mutex post_mu;
  bool posts_closed = false;

  std::mutex mu;
  std::condition_variable cv;
  std::unordered_map<uint64_t, std::weak_ptr<Connection>> open;  // Guarded by mu.
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

}  // namespace internal

namespace {

using internal::ServerCore;

// At Stop's deadline a WebSocket gets this long (or its close_timeout, if
// shorter) for the close handshake; Stop waits 5 s for everything to close.
constexpr std::chrono::milliseconds kStopCloseLimit{1'000};

// Every TLS connection begins with a handshake record (RFC 8446 5.1).
constexpr unsigned char kTlsHandshakeRecord = 0x16;

bool IsParseError(const error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

class Connection final : public internal::ConnectionPort,
                         public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerCore> core, Strand strand, NetStream stream, uint64_t id)
      : core_(std::move(core)),
        id_(id),
        strand_(std::move(strand)),
        stream_(std::move(stream)),
        timer_(strand_),
        buffer_(core_->options.max_header_bytes + 8192) {}

  void Start() {
    error_code ec;
    tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = StrCat(peer.address().to_string(), ":", peer.port());
    stream_.socket().set_option(tcp::no_delay(true), ec);  // Small SSE writes must not wait for ACKs.
    if (stream_.is_tls()) return PeekForTls();
    WaitForRequest();
  }

  bool Post(std::function<void()> fn) override {
    std::shared_lock lock(core_->post_mu);
    if (core_->posts_closed) return false;
    asio::post(strand_, std::move(fn));
    return true;
  }

  void Send(Outgoing piece) override {
    if (state_ == State::kClosed || piece.exchange != exchange_) return;
    Wire wire{piece.exchange, {}, piece.counted, piece.last};
    if (piece.head) {
      const bool stream = !piece.head->content_length.has_value();
      const bool chunked = stream && version11_;
      keep_alive_ = keep_alive_ && !draining_ && !(stream && !chunked);
      wire.bytes = SerializeResponseHead(piece.head->status, piece.head->headers,
                                         piece.head->content_length, chunked, keep_alive_);
    }
    if (!head_request_) wire.bytes += piece.data;
    out_.push_back(std::move(wire));
    StartWrite();
  }

  void Abort(const std::shared_ptr<Exchange>& exchange) override {
    if (exchange == exchange_) Close();
  }

  void Abandon(const std::shared_ptr<Exchange>& exchange) override {
    if (exchange != exchange_ || state_ == State::kClosed) return;
    if (exchange->Advance(Exchange::Phase::kIdle, Exchange::Phase::kFinished)) {
      ErrorBody error = core_->ErrorBodyFor(500, "the handler sent no response");
      Send(Outgoing{exchange,
                    internal::OutgoingHead{500, Headers{{"Content-Type", error.content_type}}, error.body.size()},
                    error.body, 0, true});
    } else {
      Close();  // A stream cannot be completed without its writer.
    }
  }

  // Any thread (the writer's AcceptWebSocket).
  std::shared_ptr<WebSocket> AcceptWebSocket(const std::shared_ptr<Exchange>& exchange,
                                             WebSocketOptions options,
                                             WebSocketHandlers handlers) override {
    internal::WsEvents events;
    events.on_message = std::move(handlers.on_message);
    events.on_close = [on_close = std::move(handlers.on_close)](internal::WsEnd end) {
      if (on_close) on_close(end.code, std::move(end.reason));
    };
    std::shared_ptr<Connection> connection = self();
    std::weak_ptr<Connection> weak = connection;
    internal::WsSessionParts parts = internal::MakeWsSession(
        strand_, [connection](std::function<void()> fn) { return connection->Post(std::move(fn)); },
        std::move(options), std::move(events), [weak] {
          if (std::shared_ptr<Connection> c = weak.lock()) c->OnWebSocketFinished();
        });
    if (!Post([connection, exchange, session = parts.session] {
          connection->Upgrade(exchange, session);
        })) {
      return nullptr;
    }
    return parts.handle;
  }

  // Server shutdown: nothing more after the current response. A WebSocket
  // goes on until Close.
  void Drain() {
    draining_ = true;
    if (state_ == State::kWaiting) Close();
  }

  void Close() {
    if (state_ == State::kClosed) return;
    if (state_ == State::kWebSocket) {
      // The session closes with 1001, then reports OnWebSocketFinished.
      if (std::shared_ptr<internal::WsSession> session = ws_session_) {
        session->GoAway("server shutting down", kStopCloseLimit);
      }
      return;
    }
    state_ = State::kClosed;
    error_code ec;
    timer_.cancel();
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    if (!writing_) ReleaseQueued();
    if (std::shared_ptr<Exchange> exchange = std::move(exchange_)) exchange->CloseBeforeFinish();
    if (std::shared_ptr<internal::WsSession> session = std::move(ws_session_)) {
      session->Abort(websocket_close::kAbnormal, "connection closed before the upgrade");
    }
    core_->Unregister(id_);
  }

 private:
  enum class State {
    kTls, kWaiting, kReading, kHandling, kAnswering, kLingering, kUpgrading, kWebSocket, kClosed
  };

  struct Wire {
    std::shared_ptr<Exchange> exchange;  // Null for the server's own answers.
    std::string bytes;
    size_t counted = 0;
    bool last = false;
  };

  std::shared_ptr<Connection> self() { return shared_from_this(); }

  // A TLS port: the first byte says whether a TLS client is speaking. It is
  // only peeked, so the handshake reads it again.
  void PeekForTls() {
    state_ = State::kTls;
    ArmTimer(core_->options.header_timeout);
    read_pending_ = true;
    stream_.socket().async_receive(asio::buffer(peeked_, 1), tcp::socket::message_peek,
                                   [self = self()](error_code ec, size_t n) {
                                     self->OnPeek(ec, n);
                                   });
  }

  void OnPeek(error_code ec, size_t n) {
    read_pending_ = false;
    if (state_ != State::kTls) return;
    if (ec || n == 0) return Close();
    if (peeked_[0] != kTlsHandshakeRecord) {
      // Plain HTTP (or noise) on the TLS port: answered in plain text, so a
      // client that forgot https:// is told why instead of seeing a reset.
      stream_.DropTls();
      return Answer(400, "this port speaks HTTPS; the request was sent as plain HTTP");
    }
    // The handshake gets what is left of header_timeout: ArmTimer is not
    // re-armed here, so peek and handshake together are bounded by it.
    stream_.tls().async_handshake(asio::ssl::stream_base::server,
                                  [self = self()](error_code ec2) { self->OnTlsHandshake(ec2); });
  }

  void OnTlsHandshake(error_code ec) {
    if (state_ != State::kTls) return;
    // A failed handshake (no common version or cipher, a client that does
    // not trust us) has no channel to answer on: the client's TLS stack
    // already has OpenSSL's alert.
    if (ec || draining_) return Close();
    WaitForRequest();
  }

  void WaitForRequest() {
    state_ = State::kWaiting;
    if (buffer_.size() > 0) {  // Pipelined bytes are already here.
      if (read_pending_) {
        stream_.socket().cancel();  // OnRead sees the abort in kWaiting and starts the header.
      } else {
        StartHeader();
      }
      return;
    }
    ArmTimer(requests_seen_ ? core_->options.idle_timeout : core_->options.header_timeout);
    if (!read_pending_) ReadSome();
  }

  void ReadSome() {
    size_t room = buffer_.max_size() - buffer_.size();
    if (room == 0) return;  // Full of pipelined bytes: they wait for their turn.
    read_pending_ = true;
    stream_.async_read_some(buffer_.prepare(std::min<size_t>(room, 4096)),
                            [self = self()](error_code ec, size_t n) { self->OnRead(ec, n); });
  }

  void OnRead(error_code ec, size_t n) {
    read_pending_ = false;
    if (state_ == State::kClosed || state_ == State::kWebSocket) return;
    if (state_ == State::kUpgrading) {
      if (!ec) buffer_.commit(n);
      if (ec && ec != asio::error::operation_aborted) return Close();  // The client left.
      return HandOff();
    }
    if (state_ == State::kLingering) {
      lingered_ += n;
      if (ec || lingered_ > core_->options.linger_bytes) return Close();
      return LingerRead();
    }
    if (!ec) buffer_.commit(n);
    if (ec == asio::error::operation_aborted && state_ == State::kWaiting) return StartHeader();
    if (ec) return Close();  // EOF or reset: the client is gone.
    if (state_ == State::kWaiting) return StartHeader();
    if (state_ == State::kHandling) return ReadSome();
  }

  void StartHeader() {
    state_ = State::kReading;
    requests_seen_ = true;
    // The request's first bytes are here (or were pipelined earlier).
    received_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(
        std::min<size_t>(core_->options.max_header_bytes, UINT32_MAX)));
    parser_->body_limit(core_->options.max_body_bytes);
    ArmTimer(core_->options.header_timeout);
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             [self = self()](error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
      return Answer(431, "request header fields too large");
    }
    if (ec == bhttp::error::body_limit) return Answer(413, "request body too large");
    if (IsParseError(ec)) return Answer(400, "malformed HTTP request");
    if (ec) return Close();
    if (draining_ || core_->draining.load()) return Answer(503, "server is shutting down");
    if (parser_->content_length() &&
        *parser_->content_length() > core_->options.max_body_bytes) {
      return Answer(413, "request body too large");
    }
    if (parser_->is_done()) return Dispatch();
    auto expect = parser_->get().find(bhttp::field::expect);
    if (expect != parser_->get().end() && EqualsIgnoreCase(std::string_view(expect->value().data(), expect->value().size()),
                         "100-continue")) {
      out_.push_back(Wire{nullptr, "HTTP/1.1 100 Continue\r\n\r\n", 0, false});
      StartWrite();
    }
    ArmTimer(core_->options.body_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = self()](error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec == bhttp::error::body_limit) return Answer(413, "request body too large");
    if (IsParseError(ec)) return Answer(400, "malformed HTTP request body");
    if (ec) return Close();
    Dispatch();
  }

  void Dispatch() {
    timer_.cancel();
    bhttp::request<bhttp::string_body> message = parser_->release();
    parser_.reset();
    HttpRequest request;
    request.method = std::string(message.method_string());
    request.target = std::string(message.target());
    size_t q = request.target.find('?');
    request.path = request.target.substr(0, q);
    if (q != std::string::npos) request.query = request.target.substr(q + 1);
    for (const auto& field : message) {
      request.headers.Add(std::string(field.name_string()), std::string(field.value()));
    }
    request.body = std::move(message.body());
    request.version = static_cast<int>(message.version());
    request.remote_address = remote_;
    request.received_ns = received_ns_;
    keep_alive_ = message.keep_alive();
    head_request_ = message.method() == bhttp::verb::head;
    version11_ = message.version() >= 11;
    const bool upgrade = IsWebSocketUpgrade(request);
    if (upgrade) {  // Kept for the 101, which the session writes.
      upgrade_target_ = request.target;
      upgrade_headers_ = request.headers;
    }

    exchange_ = std::make_shared<Exchange>(core_->options.send_soft_limit,
                                           core_->options.send_hard_limit);
    auto writer = std::make_shared<internal::WriterImpl>(self(), exchange_, version11_, upgrade);
    state_ = State::kHandling;
    ReadSome();
    core_->handler(std::move(request), std::move(writer));
  }

  // On the strand: the writer accepted a WebSocket upgrade.
  void Upgrade(const std::shared_ptr<Exchange>& exchange,
               std::shared_ptr<internal::WsSession> session) {
    if (state_ != State::kHandling || exchange != exchange_) {
      return session->Abort(websocket_close::kAbnormal, "connection closed before the upgrade");
    }
    state_ = State::kUpgrading;
    ws_session_ = std::move(session);
    exchange_.reset();
    timer_.cancel();
    HandOff();
  }

  // Moves the socket to the session once no read or write of ours is
  // pending on it (OnRead and OnWrite call back here).
  void HandOff() {
    if (writing_) return;
    if (read_pending_) {
      stream_.socket().cancel();
      return;
    }
    if (buffer_.size() > 0) {
      // RFC 6455 4.1: a client sends frames only after it has read the 101.
      std::shared_ptr<internal::WsSession> session = std::move(ws_session_);
      session->Abort(websocket_close::kProtocolError, "data sent before the upgrade completed");
      return Answer(400, "data sent before the WebSocket upgrade completed");
    }
    state_ = State::kWebSocket;
    buffer_.shrink_to_fit();  // Unused from now on; a WebSocket may live for hours.
    ws_session_->Accept(std::move(stream_), std::move(upgrade_target_),
                        std::move(upgrade_headers_));
  }

  // On the strand, from the session: it has ended (on_close has run).
  void OnWebSocketFinished() {
    ws_session_.reset();
    if (state_ != State::kWebSocket) return;
    state_ = State::kClosed;
    core_->Unregister(id_);
  }

  // The server's own answer to a request it will not hand on; then close.
  void Answer(int status, std::string_view message) {
    state_ = State::kAnswering;
    timer_.cancel();
    out_.push_back(Wire{nullptr, SerializeErrorResponse(status, core_->ErrorBodyFor(status, message)), 0, false});
    ArmTimer(core_->options.write_timeout);
    StartWrite();
  }

  void StartWrite() {
    if (writing_ || out_.empty() || state_ == State::kClosed) return;
    write_buffers_.clear();
    write_count_ = std::min<size_t>(out_.size(), 64);
    for (size_t i = 0; i < write_count_; ++i) write_buffers_.push_back(asio::buffer(out_[i].bytes));
    writing_ = true;
    if (state_ == State::kHandling) ArmTimer(core_->options.write_timeout);
    asio::async_write(stream_, write_buffers_,
                      [self = self()](error_code ec, size_t) { self->OnWrite(ec); });
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    if (state_ == State::kClosed || state_ == State::kWebSocket) return ReleaseQueued();
    if (ec) return Close();
    if (state_ == State::kHandling) timer_.cancel();
    bool finished = false;
    for (size_t i = 0; i < write_count_; ++i) {
      Wire& w = out_.front();
      if (w.exchange) w.exchange->Release(w.counted);
      finished = finished || (w.last && w.exchange == exchange_);
      out_.pop_front();
    }
    if (state_ == State::kAnswering) {
      if (out_.empty()) return Linger();
      return StartWrite();
    }
    if (state_ == State::kUpgrading) return HandOff();
    if (finished) return FinishExchange();
    StartWrite();
  }

  void FinishExchange() {
    exchange_.reset();
    if (!keep_alive_ || draining_) return Linger();
    WaitForRequest();
    StartWrite();  // Normally nothing is left; a write after the last piece is dropped by Send.
  }

  // Half-close, then wait briefly for the peer to close, so it reads our
  // last bytes instead of a reset caused by unread input. Over TLS no
  // close_notify is sent first: every response this server writes is
  // delimited (Content-Length or chunked), so a client cannot mistake the
  // end of the connection for a truncated body, and Asio offers no way to
  // send the alert without then waiting for the peer's.
  void Linger() {
    state_ = State::kLingering;
    error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    buffer_.consume(buffer_.size());
    lingered_ = 0;
    ArmTimer(core_->options.linger_timeout);
    if (read_pending_) return;
    LingerRead();
  }

  // Discarding needs no decryption: the TCP socket's bytes are read raw.
  void LingerRead() {
    read_pending_ = true;
    stream_.socket().async_read_some(asio::buffer(linger_buf_), [self = self()](error_code ec, size_t n) {
      self->OnRead(ec, n);
    });
  }

  void ArmTimer(std::chrono::milliseconds timeout) {
    timer_.expires_after(timeout);
    timer_.async_wait([self = self()](error_code ec) {
      if (ec == asio::error::operation_aborted || self->state_ == State::kClosed ||
          self->state_ == State::kUpgrading || self->state_ == State::kWebSocket) {
        return;  // The WebSocket session keeps its own time.
      }
      if (self->timer_.expiry() > asio::steady_timer::clock_type::now()) return;  // Re-armed.
      self->Close();
    });
  }

  void ReleaseQueued() {
    for (Wire& w : out_) {
      if (w.exchange) w.exchange->Release(w.counted);
    }
    out_.clear();
  }

  const std::shared_ptr<ServerCore> core_;
  const uint64_t id_;
  Strand strand_;
  NetStream stream_;
  asio::steady_timer timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  State state_ = State::kWaiting;
  std::shared_ptr<Exchange> exchange_;
  std::deque<Wire> out_;
  std::vector<asio::const_buffer> write_buffers_;
  size_t write_count_ = 0;
  size_t lingered_ = 0;
  std::string remote_;
  bool read_pending_ = false;
  bool writing_ = false;
  bool draining_ = false;
  bool keep_alive_ = true;
  bool head_request_ = false;
  bool version11_ = true;
  bool requests_seen_ = false;
  int64_t received_ns_ = 0;  // The current request's, see HttpRequest::received_ns.
  // A WebSocket upgrade request's target and fields, for the session's 101.
  std::string upgrade_target_;
  Headers upgrade_headers_;
  std::shared_ptr<internal::WsSession> ws_session_;  // kUpgrading, kWebSocket.
  char linger_buf_[4096];
  unsigned char peeked_[1];
};

void Accept(const std::shared_ptr<ServerCore>& core) {
  Strand strand = asio::make_strand(core->ioc);
  core->acceptor->async_accept(strand, [core, strand](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !core->acceptor->is_open()) return;
    if (ec) {  // Out of descriptors, say: back off instead of spinning.
      core->retry->expires_after(std::chrono::milliseconds(50));
      core->retry->async_wait([core](error_code wait_ec) {
        if (!wait_ec) Accept(core);
      });
      return;
    }
    std::shared_ptr<SslContext> tls = core->TlsContext();
    if (core->OpenCount() >= core->options.max_connections) {
      error_code ignored;
      if (tls) {  // A plain-text 503 would be noise to a TLS client.
        socket.close(ignored);
        return Accept(core);
      }
      socket.non_blocking(true, ignored);
      const std::string refusal =
          SerializeErrorResponse(503, core->ErrorBodyFor(503, "too many connections"));
      asio::write(socket, asio::buffer(refusal), ignored);
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      return Accept(core);
    }
    std::shared_ptr<Connection> connection;
    {
      std::lock_guard lock(core->mu);
      uint64_t id = core->next_id++;
      NetStream stream = tls ? NetStream(std::move(socket), std::move(tls)) : NetStream(std::move(socket));
      connection = std::make_shared<Connection>(core, strand, std::move(stream), id);
      core->open.emplace(id, connection);
    }
    asio::post(strand, [connection] { connection->Start(); });
    Accept(core);
  });
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, HttpHandler handler)
    : core_(std::make_shared<internal::ServerCore>(std::move(options), std::move(handler))) {}

HttpServer::~HttpServer() {
  Stop(std::chrono::milliseconds(0));
  {
    std::unique_lock lock(core_->post_mu);
    core_->posts_closed = true;
  }
  // Run what was posted before posts closed (on closed connections these
  // are no-ops), so no queued handler keeps a Connection, and with it the
  // core, alive.
  core_->ioc.restart();
  core_->ioc.poll();
}

absl::Status HttpServer::Start() {
  if (started_) return absl::FailedPreconditionError("HttpServer::Start called twice");
  started_ = true;
  ServerCore& core = *core_;
  if (core.options.tls.enabled()) {
    SWIFTLET_ASSIGN_OR_RETURN(std::shared_ptr<SslContext> tls,
                              internal::MakeServerTlsContext(core.options.tls));
    std::lock_guard lock(core.tls_mu);
    core.tls = std::move(tls);
    core.tls_options = core.options.tls;
  }
  error_code ec;
  asio::ip::address address = asio::ip::make_address(core.options.host, ec);
  if (ec) return absl::InvalidArgumentError(StrCat("bad listen address \"", core.options.host,
                                                   "\": ", ec.message()));
  tcp::endpoint endpoint(address, core.options.port);
  Strand strand = asio::make_strand(core.ioc);
  core.acceptor.emplace(strand);
  core.retry.emplace(strand);
  auto fail = [&](const char* what) {
    return absl::UnavailableError(StrCat(what, " ", core.options.host, ":", core.options.port,
                                         ": ", ec.message()));
  };
  if (core.acceptor->open(endpoint.protocol(), ec); ec) return fail("cannot open");
  core.acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (core.acceptor->bind(endpoint, ec); ec) return fail("cannot bind");
  if (core.acceptor->listen(asio::socket_base::max_listen_connections, ec); ec) {
    return fail("cannot listen on");
  }
  port_ = core.acceptor->local_endpoint().port();
  core.work.emplace(core.ioc.get_executor());
  Accept(core_);
  for (int i = 0; i < std::max(1, core.options.io_threads); ++i) {
    core.threads.emplace_back([c = core_] { c->ioc.run(); });
  }
  return absl::OkStatus();
}

void HttpServer::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  ServerCore& core = *core_;
  if (core.threads.empty()) return;  // Never started (or failed to).
  core.draining = true;
  std::promise<void> acceptor_closed;
  asio::post(core.acceptor->get_executor(), [&] {
    error_code ec;
    core.acceptor->close(ec);
    core.retry->cancel();
    acceptor_closed.set_value();
  });
  acceptor_closed.get_future().wait();

  auto for_each_open = [&](auto fn) {
    std::vector<std::shared_ptr<Connection>> open;
    {
      std::lock_guard lock(core.mu);
      for (auto& [id, weak] : core.open) {
        if (auto c = weak.lock()) open.push_back(std::move(c));
      }
    }
    for (auto& c : open) c->Post([c, fn] { fn(*c); });
  };
  auto wait_closed = [&](std::chrono::milliseconds timeout) {
    std::unique_lock lock(core.mu);
    core.cv.wait_for(lock, timeout, [&] { return core.open.empty(); });
  };
  for_each_open([](Connection& c) { c.Drain(); });
  wait_closed(grace);
  for_each_open([](Connection& c) { c.Close(); });
  wait_closed(std::chrono::seconds(5));

  core.work.reset();
  core.ioc.stop();
  for (std::thread& t : core.threads) t.join();
}

size_t HttpServer::open_connections() const { return core_->OpenCount(); }

absl::Status HttpServer::ReloadTls() {
  TlsServerOptions options;
  {
    std::lock_guard lock(core_->tls_mu);
    options = core_->tls_options;
  }
  return ReloadTls(options);
}

absl::Status HttpServer::ReloadTls(const TlsServerOptions& options) {
  if (!core_->TlsContext()) {
    return absl::FailedPreconditionError("TLS reload: the server was not started with TLS");
  }
  // Built outside the lock: reading and checking the files takes a while,
  // and new connections meanwhile get the old certificate.
  SWIFTLET_ASSIGN_OR_RETURN(std::shared_ptr<SslContext> tls, internal::MakeServerTlsContext(options));
  std::lock_guard lock(core_->tls_mu);
  core_->tls = std::move(tls);
  core_->tls_options = options;
  return absl::OkStatus();
}

}  // namespace swiftlet::http
