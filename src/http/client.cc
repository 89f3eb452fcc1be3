// The client's Beast side. Everything runs on the one I/O thread, so Impl
// and Call state needs no locks; Send/Cancel/destructor post onto it.
#include "http/client.h"

#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <atomic>
#include <future>
#include <limits>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>

#include "core/str_cat.h"
#include "http/sse_parser.h"
#include "http/tls_context.h"
#include "http/tls_stream.h"
#include "http/wire_format.h"

namespace swiftlet::http {
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

class Call;

// One connection: plain, or TLS with `tls` (its handshake is the Call's).
struct Conn {
  Conn(asio::io_context& ioc, std::atomic<size_t>& open, size_t max_buffer,
       const std::shared_ptr<internal::SslContext>& tls)
      : stream(tls ? internal::NetStream(tcp::socket(ioc), tls)
                   : internal::NetStream(tcp::socket(ioc))),
        buffer(max_buffer),
        open_(open) {
    open_.fetch_add(1);
  }
  ~Conn() { open_.fetch_sub(1); }
  internal::NetStream stream;
  boost::beast::flat_buffer buffer;

 private:
  std::atomic<size_t>& open_;
};

}  // namespace

struct HttpClient::Impl {
  explicit Impl(HttpClientOptions o) : options(std::move(o)) {
    auto context = internal::MakeClientTlsContext(options.tls);
    if (context.ok()) {
      tls = *std::move(context);
    } else {
      tls_error = context.status();
    }
  }

  const HttpClientOptions options;
  std::shared_ptr<internal::SslContext> tls;  // Null: plain http.
  absl::Status tls_error;                     // Set: every request fails with it.
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::atomic<uint64_t> next_id{1};
  std::atomic<size_t> open{0};
  // I/O thread only:
  std::unordered_map<uint64_t, std::shared_ptr<Call>> calls;
  std::vector<std::shared_ptr<Conn>> idle;
  bool stopping = false;
};

namespace {

absl::Status NetError(const char* what, const error_code& ec) {
  bool malformed = ec.category() == bhttp::make_error_code(bhttp::error::bad_version).category() &&
                   ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
  std::string message = StrCat(what, ": ", ec.message());
  return malformed ? absl::InvalidArgumentError(message) : absl::UnavailableError(message);
}

class Call : public std::enable_shared_from_this<Call> {
 public:
  Call(HttpClient::Impl* impl, uint64_t id, ClientRequest request, ClientCallbacks callbacks)
      : impl_(impl),
        id_(id),
        request_(std::move(request)),
        callbacks_(std::move(callbacks)),
        sse_(impl->options.max_event_bytes),
        idle_timer_(impl->ioc),
        total_timer_(impl->ioc),
        resolver_(impl->ioc) {}

  void Start() {
    const HttpClientOptions& o = impl_->options;
    if (!impl_->tls_error.ok()) return Fail(impl_->tls_error);
    Headers headers = request_.headers;
    if (!request_.body.empty() && !headers.Has("content-type")) {
      headers.Add("Content-Type", "application/json");
    }
    wire_ = SerializeRequestHead(request_.method, request_.target, StrCat(o.host, ":", o.port),
                                 headers, request_.body.size()) +
            request_.body;
    if (o.request_timeout.count() > 0) {
      total_timer_.expires_after(o.request_timeout);
      total_timer_.async_wait([self = shared_from_this()](error_code ec) {
        if (!ec) self->Fail(absl::DeadlineExceededError("request timed out"));
      });
    }
    if (!impl_->idle.empty()) {
      conn_ = std::move(impl_->idle.back());
      impl_->idle.pop_back();
      response_.reused_connection = true;
      return WriteRequest();
    }
    Connect();
  }

  void Fail(absl::Status status) {
    if (done_) return;
    done_ = true;
    total_timer_.cancel();
    Close();
    Complete(std::move(status));
  }

 private:
  template <typename F>
  auto Guarded(F f) {  // Drops completions from an earlier attempt or after the end.
    return [self = shared_from_this(), conn = conn_, attempt = attempt_, f](auto&&... args) {
      if (self->done_ || attempt != self->attempt_) return;
      f(*self, std::forward<decltype(args)>(args)...);
    };
  }

  void ArmIdle(std::chrono::milliseconds timeout) {
    idle_timer_.expires_after(timeout);
    idle_timer_.async_wait([self = shared_from_this(), attempt = attempt_](error_code ec) {
      if (ec || self->done_ || attempt != self->attempt_) return;
      if (self->idle_timer_.expiry() > asio::steady_timer::clock_type::now()) return;
      self->Fail(absl::DeadlineExceededError("timed out waiting for the server"));
    });
  }

  void Connect() {
    conn_ = std::make_shared<Conn>(impl_->ioc, impl_->open, impl_->options.max_header_bytes + 65536,
                                   impl_->tls);
    ArmIdle(impl_->options.connect_timeout);
    resolver_.async_resolve(
        impl_->options.host, std::to_string(impl_->options.port),
        Guarded([](Call& c, error_code ec, tcp::resolver::results_type results) {
          if (ec) return c.Fail(NetError("resolve failed", ec));
          asio::async_connect(
              c.conn_->stream.socket(), results,
              [self = c.shared_from_this(), conn = c.conn_, attempt = c.attempt_](
                  error_code ec2, const tcp::endpoint&) {
                if (self->done_ || attempt != self->attempt_) return;
                if (ec2) return self->Fail(NetError("connect failed", ec2));
                error_code ignored;
                self->conn_->stream.socket().set_option(tcp::no_delay(true), ignored);
                self->conn_->stream.is_tls() ? self->SecureConnection() : self->WriteRequest();
              });
        }));
  }

  // https: the TLS handshake, under what is left of connect_timeout.
  void SecureConnection() {
    const TlsClientOptions& tls = impl_->options.tls;
    internal::TlsStream& stream = conn_->stream.tls();
    absl::Status prepared =
        internal::PrepareClientTls(stream, tls.server_name.empty() ? impl_->options.host : tls.server_name);
    if (!prepared.ok()) return Fail(prepared);
    stream.async_handshake(asio::ssl::stream_base::client, Guarded([](Call& c, error_code ec) {
                             if (ec) {
                               return c.Fail(absl::UnavailableError(StrCat(
                                   "TLS handshake failed: ", internal::TlsErrorText(c.conn_->stream.tls(), ec))));
                             }
                             c.WriteRequest();
                           }));
  }

  void WriteRequest() {
    ArmIdle(impl_->options.idle_timeout);
    asio::async_write(conn_->stream, asio::buffer(wire_),
                      Guarded([](Call& c, error_code ec, size_t) {
                        if (ec) return c.RetryOrFail(NetError("send failed", ec));
                        c.ReadHeader();
                      }));
  }

  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(impl_->options.max_header_bytes));
    parser_->body_limit(std::numeric_limits<uint64_t>::max());
    if (request_.method == "HEAD") parser_->skip(true);
    bhttp::async_read_header(
        conn_->stream, conn_->buffer, *parser_, Guarded([](Call& c, error_code ec, size_t) {
          // A kept-alive connection the server closed while it sat idle
          // (over TLS, without close_notify: a truncated stream).
          if (ec == bhttp::error::end_of_stream || ec == asio::error::connection_reset ||
              ec == asio::ssl::error::stream_truncated) {
            return c.RetryOrFail(NetError("connection closed before the response", ec));
          }
          if (ec == bhttp::error::header_limit || ec == bhttp::error::buffer_overflow) {
            return c.Fail(absl::ResourceExhaustedError("response header too large"));
          }
          if (ec) return c.Fail(NetError("reading the response failed", ec));
          c.OnHeader();
        }));
  }

  void OnHeader() {
    const auto& message = parser_->get();
    response_.status = static_cast<int>(message.result_int());
    for (const auto& field : message) {
      response_.headers.Add(std::string(field.name_string()), std::string(field.value()));
    }
    std::string_view type = response_.headers.Get("content-type").value_or("");
    sse_mode_ = type.size() >= 17 && EqualsIgnoreCase(type.substr(0, 17), "text/event-stream");
    if (callbacks_.on_headers) callbacks_.on_headers(response_.status, response_.headers);
    if (!done_) ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return Succeed();
    parser_->get().body().data = body_buf_;
    parser_->get().body().size = sizeof(body_buf_);
    ArmIdle(impl_->options.idle_timeout);
    bhttp::async_read_some(conn_->stream, conn_->buffer, *parser_,
                           Guarded([](Call& c, error_code ec, size_t) {
                             if (ec == bhttp::error::need_buffer) ec = {};
                             if (ec) return c.Fail(NetError("reading the body failed", ec));
                             size_t got = sizeof(c.body_buf_) - c.parser_->get().body().size;
                             c.Deliver(std::string_view(c.body_buf_, got));
                             if (!c.done_) c.ReadBody();
                           }));
  }

  void Deliver(std::string_view bytes) {
    if (!sse_mode_) {
      if (response_.body.size() + bytes.size() > impl_->options.max_body_bytes) {
        return Fail(absl::ResourceExhaustedError("response body too large"));
      }
      response_.body.append(bytes);
      return;
    }
    absl::Status s = sse_.Feed(bytes, [this](const SseEvent& event) {
      if (done_) return;
      ++response_.events;
      if (callbacks_.on_event) callbacks_.on_event(event.data);
    });
    if (!s.ok()) Fail(s);
  }

  void RetryOrFail(absl::Status status) {
    if (!response_.reused_connection || retried_) return Fail(std::move(status));
    retried_ = true;
    response_.reused_connection = false;
    ++attempt_;
    Close();
    Connect();
  }

  void Succeed() {
    done_ = true;
    idle_timer_.cancel();
    total_timer_.cancel();
    if (parser_->keep_alive() && !impl_->stopping &&
        impl_->idle.size() < impl_->options.max_idle_connections) {
      conn_->buffer.consume(conn_->buffer.size());
      impl_->idle.push_back(std::move(conn_));
    } else {
      Close();
    }
    Complete(absl::OkStatus());
  }

  // Closes the connection of this attempt (a retry keeps the total timer).
  void Close() {
    idle_timer_.cancel();
    resolver_.cancel();
    if (conn_) {
      error_code ignored;
      conn_->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      conn_->stream.socket().close(ignored);
      conn_.reset();  // Pending operations hold their own reference.
    }
  }

  void Complete(absl::Status status) {
    std::shared_ptr<Call> keep = shared_from_this();
    impl_->calls.erase(id_);
    if (callbacks_.on_done) callbacks_.on_done(std::move(status), std::move(response_));
  }

  HttpClient::Impl* const impl_;
  const uint64_t id_;
  ClientRequest request_;
  ClientCallbacks callbacks_;
  std::string wire_;
  std::shared_ptr<Conn> conn_;
  std::optional<bhttp::response_parser<bhttp::buffer_body>> parser_;
  SseParser sse_;
  ClientResponse response_;
  asio::steady_timer idle_timer_;
  asio::steady_timer total_timer_;
  tcp::resolver resolver_;
  uint64_t attempt_ = 0;
  bool sse_mode_ = false;
  bool retried_ = false;
  bool done_ = false;
  char body_buf_[16384];
};

}  // namespace

HttpClient::HttpClient(HttpClientOptions options)
    : impl_(std::make_shared<Impl>(std::move(options))) {
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

HttpClient::~HttpClient() {
  Impl* impl = impl_.get();
  std::promise<void> cancelled;
  asio::post(impl->ioc, [impl, &cancelled] {
    impl->stopping = true;
    std::vector<std::shared_ptr<Call>> calls;
    for (auto& [id, call] : impl->calls) calls.push_back(call);
    for (auto& call : calls) call->Fail(absl::CancelledError("client destroyed"));
    impl->idle.clear();
    cancelled.set_value();
  });
  cancelled.get_future().wait();
  impl->work.reset();
  impl->thread.join();
}

uint64_t HttpClient::Send(ClientRequest request, ClientCallbacks callbacks) {
  Impl* impl = impl_.get();
  uint64_t id = impl->next_id.fetch_add(1);
  asio::post(impl->ioc, [impl, id, request = std::move(request),
                         callbacks = std::move(callbacks)]() mutable {
    auto call = std::make_shared<Call>(impl, id, std::move(request), std::move(callbacks));
    if (impl->stopping) return call->Fail(absl::CancelledError("client destroyed"));
    impl->calls.emplace(id, call);
    call->Start();
  });
  return id;
}

void HttpClient::Cancel(uint64_t id) {
  Impl* impl = impl_.get();
  asio::post(impl->ioc, [impl, id] {
    auto it = impl->calls.find(id);
    if (it != impl->calls.end()) {
      std::shared_ptr<Call> call = it->second;
      call->Fail(absl::CancelledError("cancelled"));
    }
  });
}

size_t HttpClient::open_connections() const { return impl_->open.load(); }

}  // namespace swiftlet::http
