// One WebSocket connection on Beast, server or client role.
//
// Phases, all on the session's strand:
//   kNew        created; the server has not yet handed over its socket
//   kHandshake  the 101 is being written (server) or the connection and
//               upgrade exchange are under way (client); timed by our own
//               deadline (handshake_timeout)
//   kOpen       a read is always pending (Beast answers pings and notices
//               close frames only while reading); writes go one at a time
//               from queue_
//   kLingering  on_close has run; the half-closed socket is drained until
//               the peer closes it too, or the close deadline passes
//   kDone       the socket is closed and the owner told (`finished`)
// Closing is a flag on top of kOpen: sends are refused, the close frame
// goes out after the messages queued before it (or at once, dropping them,
// for urgent closes), and our deadline (close_timeout) drops the TCP
// connection if the peer does not finish the handshake. The connection
// ends when the pending read fails, which Beast makes happen for every
// ending: a close handshake either side began, a protocol error (Beast
// sends 1002/1007/1009 itself), its ping timeout, or the socket closed
// under it. Once this side has begun to close no new read starts (Beast's
// close reads by itself), and the close's completion ends the session
// when no read is pending.
//
// Beast 1.74 can park a read and a close on each other for good: a read
// that meets a bad frame while our close frame is being written waits for
// the write lock holding the read lock, which the close needs next. Nothing
// wakes them, not even closing the socket. Not reading once closing keeps
// the common case out (a close begun on a message, e.g. a binary one,
// behind an echo still being written: websocket_session_fuzz found one
// input in ten parking until close_timeout); a close begun by the
// application while a read is pending can still meet it. So our close
// deadline ends the session itself, and completion handlers hold the
// session weakly: a parked handler must not keep its session, and the
// socket, alive. The owner (the server's connection, the client) holds the
// session until it is done.
#include "http/websocket_session.h"

#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <algorithm>
#include <deque>
#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/bind_handler.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket/error.hpp>
#include <boost/beast/websocket/stream.hpp>

#include "core/str_cat.h"

namespace swiftlet::http::internal {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using boost::system::error_code;
using tcp = asio::ip::tcp;

}  // namespace

// The WebSocket teardown of a NetStream (found by Beast through ADL) only
// half-closes the TCP socket and returns at once. Beast's own teardown for
// sockets waits for the peer's EOF, and after a close that Beast begins
// inside a read (a bad frame, the peer's close frame) nothing but the ping
// timer would bound that wait, and the read would end as a timeout, hiding
// the close code. The session drains and closes the socket itself
// (Session::Linger). Over TLS no close_notify goes first, for the same
// reason (Asio's TLS shutdown waits for the peer's): the close frames have
// already ended the conversation, so nothing can be taken for truncated.
template <class Handler>
void async_teardown(beast::role_type, NetStream& stream, Handler&& handler) {
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  // Success whatever shutdown said: the close frames are already through,
  // and Beast would report a shutdown error instead of the close code.
  asio::post(stream.get_executor(),
             beast::bind_front_handler(std::forward<Handler>(handler), error_code()));
}

// Beast closes the lowest layer (this) when its own timers expire.
void beast_close_socket(NetStream& stream) {
  error_code ignored;
  stream.socket().close(ignored);
}

namespace {

using Stream = websocket::stream<NetStream, /*deflateSupported=*/false>;

// A close frame's reason is at most 123 bytes (125 minus the code).
constexpr size_t kMaxCloseReason = 123;
// A read buffer grown past this by a big message gives its memory back, so
// a few big messages do not pin max_message_bytes per idle connection.
constexpr size_t kKeptReadCapacity = 16 << 10;

WsEnd MakeEnd(int code, std::string reason, absl::Status status) {
  WsEnd end;
  end.code = code;
  end.reason = std::move(reason);
  end.status = std::move(status);
  return end;
}

bool IsWebSocketError(const error_code& ec) {
  return ec.category() == websocket::make_error_code(websocket::error::closed).category();
}

class Session final : public WsSession, public std::enable_shared_from_this<Session> {
  // A completion handler that runs `f(session, args...)` if the session
  // still exists (see the file comment). First in the class: its return
  // type is deduced from its body.
  template <class F>
  auto Weak(F f) {
    return [weak = weak_from_this(), f = std::move(f)](auto&&... args) mutable {
      if (std::shared_ptr<Session> self = weak.lock()) {
        f(*self, std::forward<decltype(args)>(args)...);
      }
    };
  }

 public:
  Session(const asio::any_io_executor& executor, WsPostFn post, WebSocketOptions options,
          WsEvents events, std::function<void()> finished)
      : post_(std::move(post)),
        options_(std::move(options)),
        events_(std::move(events)),
        finished_(std::move(finished)),
        send_(std::make_shared<WsSendState>(options_.send_soft_limit, options_.send_hard_limit)),
        ws_(executor),
        deadline_(executor) {}

  const std::shared_ptr<WsSendState>& send_state() const { return send_; }

  bool Post(std::function<void()> fn) override { return post_(std::move(fn)); }

  void Send(std::string text, size_t counted) override {
    if (ended() || closing_) {
      send_->Release(counted);
      return;
    }
    queue_.push_back(Out{std::move(text), counted, false});
    Pump();
  }

  void Close(int code, std::string reason, bool urgent) override {
    BeginClose(code, std::move(reason), urgent, options_.close_timeout);
  }

  void Accept(NetStream stream, std::string target, Headers headers) override {
    if (phase_ != Phase::kNew) return;
    phase_ = Phase::kHandshake;
    ws_.next_layer() = std::move(stream);
    Configure();
    // The fields Beast checks, each repeated one joined into a list as
    // IsWebSocketUpgrade read them.
    websocket::request_type request;
    request.method(beast::http::verb::get);
    request.target(target);
    request.version(11);
    for (std::string_view name :
         {"Host", "Connection", "Upgrade", "Sec-WebSocket-Key", "Sec-WebSocket-Version"}) {
      std::string joined;
      for (const auto& [n, value] : headers.fields()) {
        if (!EqualsIgnoreCase(n, name)) continue;
        if (!joined.empty()) joined += ", ";
        joined += value;
      }
      if (!joined.empty()) request.set(beast::string_view(name.data(), name.size()), joined);
    }
    // Beast names itself, with its version, unless told otherwise.
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& response) { response.set("Server", "swiftlet"); }));
    ArmDeadline(options_.handshake_timeout);
    // Beast builds its answer from the request before this call returns.
    ws_.async_accept(request, Weak([](Session& s, error_code ec) { s.OnHandshake(ec); }));
  }

  void Connect(std::string host, uint16_t port, std::string target, Headers headers,
               std::shared_ptr<SslContext> tls, std::string tls_name) override {
    if (phase_ != Phase::kNew) return;
    phase_ = Phase::kHandshake;
    if (tls) {
      ws_.next_layer() = NetStream(tcp::socket(ws_.get_executor()), std::move(tls));
      if (absl::Status s = PrepareClientTls(ws_.next_layer().tls(), tls_name); !s.ok()) {
        return Finish(MakeEnd(websocket_close::kAbnormal, std::string(s.message()), s));
      }
    }
    ArmDeadline(options_.handshake_timeout);
    resolver_.emplace(ws_.get_executor());
    resolver_->async_resolve(
        host, std::to_string(port),
        Weak([host, port, target = std::move(target), headers = std::move(headers)](
                 Session& s, error_code ec, tcp::resolver::results_type results) mutable {
          if (s.ended()) return;
          if (ec) return s.FailHandshake("resolve failed", ec);
          // Spelled out rather than Weak(): async_connect picks its overload
          // by the handler's exact signature.
          asio::async_connect(
              s.ws_.next_layer().socket(), results,
              [weak = s.weak_from_this(), host = std::move(host), port,
               target = std::move(target),
               headers = std::move(headers)](error_code ec2, const tcp::endpoint&) mutable {
                std::shared_ptr<Session> s2 = weak.lock();
                if (!s2 || s2->ended()) return;
                if (ec2) return s2->FailHandshake("connect failed", ec2);
                s2->SecureThenHandshake(StrCat(host, ":", port), std::move(target),
                                        std::move(headers));
              });
        }));
  }

  void Abort(int code, std::string reason) override {
    if (phase_ != Phase::kNew) return;
    Finish(MakeEnd(code, std::move(reason),
                   absl::UnavailableError("connection closed before the upgrade")));
  }

  void Fail(absl::Status error) override {
    if (phase_ != Phase::kNew) return;
    Finish(MakeEnd(websocket_close::kAbnormal, std::string(error.message()), error));
  }

  void GoAway(std::string reason, std::chrono::milliseconds limit) override {
    BeginClose(websocket_close::kGoingAway, std::move(reason), true,
               std::min(limit, options_.close_timeout));
  }

 private:
  enum class Phase { kNew, kHandshake, kOpen, kLingering, kDone };

  // on_close has run; the socket may still be lingering.
  bool ended() const { return phase_ == Phase::kLingering || phase_ == Phase::kDone; }

  struct Out {
    std::string text;
    size_t counted = 0;
    bool close = false;  // The close frame goes here.
  };

  void Configure() {
    error_code ignored;
    ws_.next_layer().socket().set_option(tcp::no_delay(true), ignored);  // Small messages must not wait.
    ws_.read_message_max(std::max<size_t>(1, options_.max_message_bytes));
    ws_.auto_fragment(false);
    SetBeastTimeout(options_.handshake_timeout);
    // Beast tells us about close frames only through this callback; a
    // close handshake whose TCP teardown fails still carries the peer's code.
    ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
      if (kind == websocket::frame_type::close) peer_close_seen_ = true;
    });
  }

  // Beast's own timer: `handshake` bounds the opening and closing
  // handshakes (Beast reads it when the status changes), idle_timeout
  // drives the pings.
  void SetBeastTimeout(std::chrono::milliseconds handshake) {
    websocket::stream_base::timeout timeout;
    timeout.handshake_timeout = handshake;
    // Beast pings every idle_timeout / 2 and gives up after a silent half;
    // see WebSocketOptions::ping_interval. It must always run: a close
    // that Beast begins on its own inside a read (a bad frame, the peer's
    // close frame) has no other bound while its close frame waits on a
    // peer that does not read.
    timeout.idle_timeout = 2 * std::max(options_.ping_interval, std::chrono::milliseconds(1));
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
  }

  // Client, connected: the TLS handshake first when this is wss.
  void SecureThenHandshake(std::string host, std::string target, Headers headers) {
    if (!ws_.next_layer().is_tls()) return Handshake(host, target, std::move(headers));
    ws_.next_layer().tls().async_handshake(
        asio::ssl::stream_base::client,
        Weak([host = std::move(host), target = std::move(target), headers = std::move(headers)](
                 Session& s, error_code ec) mutable {
          if (s.ended()) return;
          if (ec) {
            return s.FailHandshake(
                StrCat("TLS handshake failed: ", TlsErrorText(s.ws_.next_layer().tls(), ec)).c_str(), ec,
                /*with_code=*/false);
          }
          s.Handshake(host, target, std::move(headers));
        }));
  }

  void Handshake(const std::string& host, const std::string& target, Headers headers) {
    Configure();
    ws_.set_option(websocket::stream_base::decorator(
        [headers = std::move(headers)](websocket::request_type& request) {
          for (const auto& [name, value] : headers.fields()) {
            if (IsHandshakeField(name) || name.find_first_of("\r\n") != std::string::npos ||
                value.find_first_of("\r\n") != std::string::npos) {
              continue;
            }
            request.set(name, value);
          }
        }));
    response_.emplace();
    ws_.async_handshake(*response_, host, target,
                        Weak([](Session& s, error_code ec) { s.OnHandshake(ec); }));
  }

  static bool IsHandshakeField(std::string_view name) {
    for (std::string_view own : {"host", "upgrade", "connection", "sec-websocket-key",
                                 "sec-websocket-version", "sec-websocket-extensions"}) {
      if (EqualsIgnoreCase(name, own)) return true;
    }
    return false;
  }

  void OnHandshake(error_code ec) {
    if (ended()) return;
    if (ec) return FailHandshake("upgrade failed", ec);
    CancelDeadline();
    phase_ = Phase::kOpen;
    // From now on Beast's handshake timer bounds the closes it runs itself
    // (answering the peer's close, failing on a bad frame); ours, those we
    // start.
    SetBeastTimeout(options_.close_timeout);
    Headers response_fields;
    if (response_) {
      http_status_ = static_cast<int>(response_->result_int());
      for (const auto& field : *response_) {
        response_fields.Add(std::string(field.name_string()), std::string(field.value()));
      }
      response_.reset();
    }
    if (events_.on_open) events_.on_open(response_fields);
    if (ended()) return;
    Read();
    if (closing_) ArmDeadline(options_.close_timeout);
    Pump();
  }

  // `with_code`: `what` is followed by the error's message.
  void FailHandshake(const char* what, error_code ec, bool with_code = true) {
    WsEnd end;
    end.reason = with_code ? StrCat(what, ": ", ec.message()) : std::string(what);
    if (timed_out_) {
      end.reason = "handshake timed out";
      end.status = absl::DeadlineExceededError(end.reason);
    } else if (ec == websocket::error::upgrade_declined) {
      end.reason = "upgrade refused";
      end.status = absl::FailedPreconditionError(
          StrCat("upgrade refused with HTTP ", response_ ? response_->result_int() : 0));
    } else {
      end.status = absl::UnavailableError(end.reason);
    }
    if (response_) {
      end.http_status = static_cast<int>(response_->result_int());
      end.http_body = std::move(response_->body());
    }
    Finish(std::move(end));
  }

  void Read() {
    reading_ = true;
    ws_.async_read(read_buf_, Weak([](Session& s, error_code ec, size_t) { s.OnRead(ec); }));
  }

  void OnRead(error_code ec) {
    reading_ = false;
    if (ended()) return;
    if (ec) return Finish(EndAfter(ec));
    if (closing_) {
      read_buf_.consume(read_buf_.size());  // Closing: late messages are dropped.
    } else if (ws_.got_binary()) {
      read_buf_.consume(read_buf_.size());
      BeginClose(websocket_close::kUnsupportedData, "binary messages are not accepted", false,
                 options_.close_timeout);
    } else {
      std::string text = beast::buffers_to_string(read_buf_.data());
      read_buf_.consume(read_buf_.size());
      if (events_.on_message) events_.on_message(std::move(text));
    }
    if (read_buf_.capacity() > kKeptReadCapacity) read_buf_.shrink_to_fit();
    if (ended()) return;
    // Closing: no new read, even while our close frame waits behind queued
    // messages. Beast's close reads by itself (the peer's messages from
    // now on are dropped anyway), and a read pending beside our close is
    // what Beast can park for good (the file comment).
    if (!closing_) return Read();
    if (close_done_) Finish(EndAfter(close_ec_));  // Nothing else will end it.
  }

  // How the connection ended, from the error that ended the pending read.
  WsEnd EndAfter(const error_code& ec) {
    const bool peer_closed_first =
        (ec == websocket::error::closed || peer_close_seen_) && !close_frame_sent_;
    if (closing_ && !peer_closed_first) {
      absl::Status status;
      if (dropped_) {
        status = absl::DeadlineExceededError("the close handshake did not finish in time");
      } else if (close_done_ && close_ec_) {
        status = absl::UnavailableError(StrCat("close handshake failed: ", close_ec_.message()));
      } else if (ec && ec != websocket::error::closed && ec != asio::error::operation_aborted) {
        status = absl::UnavailableError(StrCat("connection lost while closing: ", ec.message()));
      }
      return MakeEnd(close_code_, close_reason_, status);
    }
    if (ec == websocket::error::closed || peer_close_seen_) {
      const websocket::close_reason& r = ws_.reason();
      int code = r.code == websocket::close_code::none ? websocket_close::kNoStatus
                                                       : static_cast<int>(r.code);
      return MakeEnd(code, std::string(r.reason.data(), r.reason.size()), absl::OkStatus());
    }
    // Beast sent these close frames itself.
    if (ec == websocket::error::message_too_big) {
      return MakeEnd(websocket_close::kMessageTooBig, "message too big",
                   absl::ResourceExhaustedError("incoming message over max_message_bytes"));
    }
    if (ec == websocket::error::bad_frame_payload) {
      return MakeEnd(websocket_close::kInvalidPayload, "invalid text",
                   absl::InvalidArgumentError("text message that is not UTF-8"));
    }
    if (IsWebSocketError(ec)) {
      return MakeEnd(websocket_close::kProtocolError, "protocol error",
                   absl::InvalidArgumentError(StrCat("protocol error: ", ec.message())));
    }
    if (ec == beast::error::timeout) {
      return MakeEnd(websocket_close::kAbnormal, "ping timeout",
                   absl::DeadlineExceededError("the peer did not answer a ping"));
    }
    return MakeEnd(websocket_close::kAbnormal, "connection lost",
                 absl::UnavailableError(StrCat("connection lost: ", ec.message())));
  }

  void BeginClose(int code, std::string reason, bool urgent, std::chrono::milliseconds limit) {
    if (ended()) return;
    send_->MarkClosed();
    if (urgent) DropQueued();
    if (closing_) {  // A second, urgent close may only shorten the wait.
      if (urgent && phase_ == Phase::kOpen) ArmDeadline(limit);
      return;
    }
    closing_ = true;
    close_code_ = IsSendableCloseCode(code) ? code : websocket_close::kNormal;
    close_reason_ = TruncateUtf8(std::move(reason), kMaxCloseReason);
    if (phase_ != Phase::kOpen) {
      // Never opened: an urgent close ends it here; a polite one is sent
      // after the handshake, like the messages before it.
      if (urgent) {
        Finish(MakeEnd(close_code_, close_reason_,
                       absl::CancelledError("closed before it opened")));
      } else {
        queue_.push_back(Out{{}, 0, true});
      }
      return;
    }
    queue_.push_back(Out{{}, 0, true});
    ArmDeadline(limit);
    Pump();
  }

  // Drops queued messages except the one being written (its buffer is in
  // the socket's hands until the write completes).
  void DropQueued() {
    size_t keep = writing_ ? 1 : 0;
    while (queue_.size() > keep) {
      send_->Release(queue_.back().counted);
      queue_.pop_back();
    }
  }

  void Pump() {
    if (phase_ != Phase::kOpen || writing_ || queue_.empty()) return;
    if (queue_.front().close) {
      queue_.pop_front();
      // Not open: Beast is already answering the peer's close frame.
      if (!ws_.is_open()) return;
      close_frame_sent_ = true;
      ws_.async_close(websocket::close_reason(static_cast<websocket::close_code>(close_code_),
                                              close_reason_),
                      Weak([](Session& s, error_code ec) { s.OnClosed(ec); }));
      return;
    }
    writing_ = true;
    ws_.text(true);
    ws_.async_write(asio::buffer(queue_.front().text),
                    Weak([](Session& s, error_code ec, size_t) { s.OnWrite(ec); }));
  }

  // Our close handshake is over (or failed). A pending read ends next:
  // Beast resumes it, or it meets the peer's EOF or our deadline.
  void OnClosed(error_code ec) {
    close_done_ = true;
    close_ec_ = ec;
    if (ended() || reading_) return;
    Finish(EndAfter(ec ? ec : error_code(websocket::error::closed)));
  }

  void OnWrite(error_code ec) {
    writing_ = false;
    if (!queue_.empty()) {
      send_->Release(queue_.front().counted);
      queue_.pop_front();
    }
    if (ended()) return;
    if (ec) return Drop();  // The pending read (or close) then fails and ends the session.
    Pump();
  }

  // Closes the TCP connection under Beast: every pending socket operation
  // fails, the read or close with it, and the session ends.
  void Drop() {
    error_code ignored;
    if (resolver_) resolver_->cancel();
    ws_.next_layer().socket().close(ignored);
  }

  // Arms (or moves earlier) our deadline: at it the connection is dropped.
  void ArmDeadline(std::chrono::milliseconds limit) {
    auto at = asio::steady_timer::clock_type::now() + limit;
    if (deadline_armed_ && deadline_.expiry() <= at) return;
    deadline_armed_ = true;
    deadline_.expires_at(at);
    deadline_.async_wait(Weak([](Session& s, error_code ec) {
      if (ec || s.phase_ == Phase::kDone || !s.deadline_armed_) return;
      if (s.deadline_.expiry() > asio::steady_timer::clock_type::now()) return;  // Moved.
      s.timed_out_ = s.phase_ == Phase::kHandshake;
      s.dropped_ = true;
      s.Drop();
      // Beast may have parked its operations for good (see the file
      // comment): end the session without them.
      if (s.phase_ == Phase::kOpen) s.Finish(s.EndAfter(asio::error::operation_aborted));
    }));
  }

  void CancelDeadline() {
    deadline_armed_ = false;
    deadline_.cancel();
  }

  // The connection is over: on_close now, then the socket lingers.
  void Finish(WsEnd end) {
    if (ended()) return;
    // `finished` may drop the owner's reference.
    std::shared_ptr<Session> keep = shared_from_this();
    const bool was_open = phase_ == Phase::kOpen;
    phase_ = Phase::kLingering;
    if (end.http_status == 0) end.http_status = http_status_;
    send_->MarkClosed();
    DropQueued();
    if (!queue_.empty()) {  // The write in flight: its bytes are no longer owed.
      send_->Release(queue_.front().counted);
      queue_.front().counted = 0;
    }
    read_buf_ = beast::flat_buffer();
    WsEvents events = std::move(events_);
    events_ = WsEvents();
    if (events.on_close) events.on_close(std::move(end));
    events = WsEvents();  // Handlers may hold the handle, which holds us.
    if (!was_open) {
      Drop();
      return Done();
    }
    Linger();
  }

  // After the close frames (our teardown only half-closed the socket):
  // read and discard until the peer closes too, so it is not sent a reset
  // that could destroy our last frames in flight; bounded by the close
  // deadline. Reads are tried at once, not left to the reactor: the peer's
  // FIN may already have been seen by Beast's last read, and asio does not
  // retry a socket whose last read drained it until a new event arrives.
  void Linger() {
    tcp::socket& socket = ws_.next_layer().socket();
    if (!socket.is_open()) return Done();
    ArmDeadline(options_.close_timeout);  // Keeps an earlier deadline.
    error_code ec;
    socket.non_blocking(true, ec);
    for (int i = 0; i < 16 && !ec; ++i) socket.read_some(asio::buffer(linger_buf_), ec);
    if (ec == asio::error::would_block) {
      socket.async_wait(tcp::socket::wait_read, Weak([](Session& s, error_code) {
                          if (s.phase_ == Phase::kLingering) s.Linger();
                        }));
    } else if (ec) {
      Done();  // EOF, or the connection is gone.
    } else {    // Still sending: let the other connections of this thread run.
      asio::post(ws_.get_executor(), Weak([](Session& s) {
                   if (s.phase_ == Phase::kLingering) s.Linger();
                 }));
    }
  }

  void Done() {
    if (phase_ == Phase::kDone) return;
    phase_ = Phase::kDone;
    CancelDeadline();
    Drop();
    if (std::function<void()> finished = std::move(finished_)) {
      finished_ = nullptr;
      finished();
    }
  }

  const WsPostFn post_;
  const WebSocketOptions options_;
  WsEvents events_;
  std::function<void()> finished_;
  const std::shared_ptr<WsSendState> send_;
  Stream ws_;
  asio::steady_timer deadline_;
  std::optional<tcp::resolver> resolver_;               // Client only.
  std::optional<websocket::response_type> response_;    // Client, during the handshake.
  beast::flat_buffer read_buf_;
  std::deque<Out> queue_;
  Phase phase_ = Phase::kNew;
  bool writing_ = false;
  bool reading_ = false;
  bool closing_ = false;           // This side decided to close,
  bool close_frame_sent_ = false;  // handed Beast its close frame,
  bool close_done_ = false;        // and Beast's close completed,
  error_code close_ec_;            // with this.
  int close_code_ = websocket_close::kNormal;
  std::string close_reason_;
  bool deadline_armed_ = false;
  bool timed_out_ = false;  // The handshake deadline passed.
  bool dropped_ = false;    // Our deadline dropped the connection.
  bool peer_close_seen_ = false;  // The peer's close frame arrived.
  int http_status_ = 0;     // Client: the 101's status once open.
  char linger_buf_[2048];
};

}  // namespace

WsSessionParts MakeWsSession(const asio::any_io_executor& executor, WsPostFn post,
                             WebSocketOptions options, WsEvents events,
                             std::function<void()> finished) {
  auto session = std::make_shared<Session>(executor, std::move(post), std::move(options),
                                           std::move(events), std::move(finished));
  auto handle = std::make_shared<WebSocketHandle>(session, session->send_state());
  return WsSessionParts{session, handle};
}

}  // namespace swiftlet::http::internal
