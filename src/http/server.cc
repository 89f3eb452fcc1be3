// The server's Beast side: one Connection per socket (the acceptor and
// the server's life cycle are server_listener.cc's).
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
#include "http/server_core.h"

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
#include "http/request_reading.h"
#include "http/tls_context.h"
#include "http/tls_stream.h"
#include "http/websocket_session.h"
#include "http/wire_format.h"

namespace swiftlet::http {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using internal::Strand;
using internal::Exchange;
using internal::NetStream;
using internal::Outgoing;
using internal::SslContext;


namespace {

using internal::ServerCore;
using internal::ServerConnection;

// At Stop's deadline a WebSocket gets this long (or its close_timeout, if
// shorter) for the close handshake; Stop waits 5 s for everything to close.
constexpr std::chrono::milliseconds kStopCloseLimit{1'000};

// Every TLS connection begins with a handshake record (RFC 8446 5.1).
constexpr unsigned char kTlsHandshakeRecord = 0x16;

class Connection final : public internal::ServerConnection,
                         public std::enable_shared_from_this<Connection> {
 public:
  Connection(std::shared_ptr<ServerCore> core, Strand strand, NetStream stream, uint64_t id)
      : core_(std::move(core)),
        id_(id),
        strand_(std::move(strand)),
        stream_(std::move(stream)),
        timer_(strand_),
        buffer_(core_->options.max_header_bytes + 8192) {}

  void Start() override {
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
  void Drain() override {
    draining_ = true;
    if (state_ == State::kWaiting) Close();
  }

  void Close() override {
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
    read_timed_out_ = false;
    // The request's first bytes are here (or were pipelined earlier).
    received_ns_ = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::steady_clock::now().time_since_epoch())
                       .count();
    parser_.emplace();
    internal::SetRequestLimits(*parser_, limits());
    ArmTimer(core_->options.header_timeout);
    header_bytes_ = 0;
    ReadHeaderSome();
  }

  // The header is read with our own loop rather than async_read_header so
  // that the limit counts every byte of it: Beast alone measures the start
  // line and the fields separately when they arrive in one read.
  void ReadHeaderSome() {
    while (buffer_.size() > 0 && !parser_->is_header_done()) {
      error_code ec;
      const size_t used = parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      header_bytes_ += used;
      if (ec == bhttp::error::need_more) break;
      if (ec) return OnHeader(ec, header_bytes_);
    }
    if (parser_->is_header_done()) return OnHeader({}, header_bytes_);
    // Not done: every byte held so far, taken or waiting, is header, and a
    // header that has not ended in `max` bytes is over `max`.
    if (header_bytes_ + buffer_.size() >= core_->options.max_header_bytes) {
      return OnHeader(bhttp::error::header_limit, header_bytes_);
    }
    const size_t room = buffer_.max_size() - buffer_.size();
    if (room == 0) return OnHeader(bhttp::error::buffer_overflow, header_bytes_);
    stream_.async_read_some(buffer_.prepare(std::min<size_t>(room, 65536)),
                            [self = self()](error_code ec, size_t n) {
                              if (self->state_ == State::kClosed) return;
                              // The timer fired as this read completed: no
                              // new read without a deadline.
                              if (!ec && self->read_timed_out_) ec = asio::error::operation_aborted;
                              if (ec) return self->OnHeader(ec, self->header_bytes_);
                              self->buffer_.commit(n);
                              self->ReadHeaderSome();
                            });
  }

  RequestLimits limits() const {
    return RequestLimits{core_->options.max_header_bytes, core_->options.max_body_bytes};
  }

  // `header_bytes`: what the parser consumed, the header and nothing more
  // (it is not eager: the put that ends the header takes no body bytes).
  void OnHeader(error_code ec, size_t header_bytes) {
    if (state_ == State::kClosed) return;
    if (ec && read_timed_out_) return AnswerTimeout(/*header=*/true);
    if (ec) {
      std::optional<internal::Refusal> refusal = internal::RefuseHeader(ec);
      return refusal ? Answer(refusal->status, refusal->message) : Close();
    }
    if (draining_ || core_->draining.load()) return Answer(503, "server is shutting down");
    if (auto refusal = internal::RefuseParsedHeader(*parser_, header_bytes, limits())) {
      return Answer(refusal->status, refusal->message);
    }
    if (parser_->is_done()) return Dispatch();
    if (internal::ExpectsContinue(*parser_)) {
      out_.push_back(Wire{nullptr, "HTTP/1.1 100 Continue\r\n\r\n", 0, false});
      StartWrite();
    }
    ArmTimer(core_->options.body_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = self()](error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(error_code ec) {
    if (state_ == State::kClosed) return;
    if (ec && read_timed_out_) return AnswerTimeout(/*header=*/false);
    if (ec) {
      std::optional<internal::Refusal> refusal = internal::RefuseBody(ec);
      return refusal ? Answer(refusal->status, refusal->message) : Close();
    }
    Dispatch();
  }

  void Dispatch() {
    timer_.cancel();
    internal::TakenRequest taken = internal::TakeRequest(*parser_);
    parser_.reset();
    HttpRequest request = std::move(taken.request);
    request.remote_address = remote_;
    request.received_ns = received_ns_;
    keep_alive_ = taken.keep_alive;
    head_request_ = taken.head;
    version11_ = request.version >= 11;
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
      self->OnTimeout();
    });
  }

  void OnTimeout() {
    if (state_ != State::kReading) return Close();
    // A request began and did not arrive in time (a slow-loris header, a
    // stalled upload): the client is told so before the connection goes.
    // Beast's read is cancelled first; OnHeader / OnBody then answer.
    read_timed_out_ = true;
    error_code ignored;
    stream_.socket().cancel(ignored);
  }

  // The 408 for a request that OnTimeout cut off.
  void AnswerTimeout(bool header) {
    const auto limit = header ? core_->options.header_timeout : core_->options.body_timeout;
    Answer(408, StrCat("the request ", header ? "header" : "body", " did not arrive within ",
                       limit.count(), " ms"));
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
  std::optional<internal::RequestParser> parser_;
  State state_ = State::kWaiting;
  std::shared_ptr<Exchange> exchange_;
  std::deque<Wire> out_;
  std::vector<asio::const_buffer> write_buffers_;
  size_t write_count_ = 0;
  size_t lingered_ = 0;
  size_t header_bytes_ = 0;  // Taken by the parser for the header being read.
  std::string remote_;
  bool read_pending_ = false;
  bool writing_ = false;
  bool draining_ = false;
  bool keep_alive_ = true;
  bool head_request_ = false;
  bool version11_ = true;
  bool requests_seen_ = false;
  bool read_timed_out_ = false;  // kReading ran out of time (OnTimeout).
  int64_t received_ns_ = 0;  // The current request's, see HttpRequest::received_ns.
  // A WebSocket upgrade request's target and fields, for the session's 101.
  std::string upgrade_target_;
  Headers upgrade_headers_;
  std::shared_ptr<internal::WsSession> ws_session_;  // kUpgrading, kWebSocket.
  char linger_buf_[4096];
  unsigned char peeked_[1];
};

}  // namespace

namespace internal {

std::shared_ptr<ServerConnection> MakeServerConnection(std::shared_ptr<ServerCore> core, Strand strand,
                                                       NetStream stream, uint64_t id) {
  return std::make_shared<Connection>(std::move(core), std::move(strand), std::move(stream), id);
}

}  // namespace internal
}  // namespace swiftlet::http
