// The client's I/O thread and its bookkeeping; each connection is a
// websocket_session.cc session on the one io_context (a single thread, so
// no strands are needed).
#include "http/websocket_client.h"

#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include "http/tls_context.h"
#include "http/websocket_session.h"

namespace swiftlet::http {
namespace asio = boost::asio;

namespace {
// What a connection gets for its close handshake when the client goes.
constexpr std::chrono::milliseconds kShutdownCloseLimit{1'000};
// How long the destructor waits for every connection to end.
constexpr std::chrono::milliseconds kShutdownWait{5'000};
}  // namespace

struct WebSocketClient::Impl {
  explicit Impl(WebSocketClientOptions o) : options(std::move(o)) {
    auto context = internal::MakeClientTlsContext(options.tls);
    if (context.ok()) {
      tls = *std::move(context);
    } else {
      tls_error = context.status();
    }
  }

  bool Post(std::function<void()> fn) {
    std::shared_lock lock(post_mu);
    if (posts_closed) return false;
    asio::post(ioc, std::move(fn));
    return true;
  }

  void Ended(uint64_t id) {  // I/O thread.
    sessions.erase(id);
    std::lock_guard lock(mu);
    --open;
    cv.notify_all();
  }

  const WebSocketClientOptions options;
  std::shared_ptr<internal::SslContext> tls;  // Null: ws://.
  absl::Status tls_error;                     // Set: every connection fails with it.
  asio::io_context ioc;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::atomic<uint64_t> next_id{1};

  // Shared by every Post; exclusive once, when the client is destroyed.
  std::shared_mutex post_mu;
  bool posts_closed = false;

  mutable std::mutex mu;
  std::condition_variable cv;
  size_t open = 0;  // Guarded by mu: connections not yet ended.

  // I/O thread only. A session's post function holds the Impl, so the map
  // entry (the cycle) goes when the session ends.
  std::unordered_map<uint64_t, std::shared_ptr<internal::WsSession>> sessions;
  bool stopping = false;
};

WebSocketClient::WebSocketClient(WebSocketClientOptions options)
    : impl_(std::make_shared<Impl>(std::move(options))) {
  impl_->work.emplace(impl_->ioc.get_executor());
  impl_->thread = std::thread([impl = impl_.get()] { impl->ioc.run(); });
}

WebSocketClient::~WebSocketClient() {
  Impl* impl = impl_.get();
  impl->Post([impl] {
    impl->stopping = true;
    auto sessions = impl->sessions;  // GoAway may end a session (and erase it) at once.
    for (auto& [id, session] : sessions) {
      session->GoAway("client shutting down", kShutdownCloseLimit);
    }
  });
  bool all_ended;
  {
    std::unique_lock lock(impl->mu);
    all_ended = impl->cv.wait_for(lock, kShutdownWait, [impl] { return impl->open == 0; });
  }
  {
    std::unique_lock lock(impl->post_mu);
    impl->posts_closed = true;
  }
  impl->work.reset();
  // Ended sessions leave only completions that are already due, so run()
  // returns by itself; a session that would not end is abandoned rather
  // than waited for.
  if (!all_ended) impl->ioc.stop();
  impl->thread.join();
  impl->sessions.clear();
}

std::shared_ptr<WebSocket> WebSocketClient::Connect(std::string target, Headers headers,
                                                    WebSocketClientHandlers handlers) {
  std::shared_ptr<Impl> impl = impl_;
  const uint64_t id = impl->next_id.fetch_add(1);
  internal::WsEvents events;
  events.on_open = std::move(handlers.on_open);
  events.on_message = std::move(handlers.on_message);
  events.on_close = [on_close = std::move(handlers.on_close)](internal::WsEnd end) {
    if (!on_close) return;
    WebSocketClientClose close;
    close.code = end.code;
    close.reason = std::move(end.reason);
    close.status = std::move(end.status);
    close.http_status = end.http_status;
    close.http_body = std::move(end.http_body);
    on_close(close);
  };
  {
    std::lock_guard lock(impl->mu);
    ++impl->open;
  }
  Impl* raw = impl.get();
  internal::WsSessionParts parts = internal::MakeWsSession(
      impl->ioc.get_executor(),
      [impl](std::function<void()> fn) { return impl->Post(std::move(fn)); },
      impl->options.socket, std::move(events), [raw, id] { raw->Ended(id); });
  bool posted = impl->Post([raw, id, session = parts.session, target = std::move(target),
                            headers = std::move(headers)]() mutable {
    if (raw->stopping) {
      return session->Abort(websocket_close::kAbnormal, "client shutting down");
    }
    if (!raw->tls_error.ok()) return session->Fail(raw->tls_error);
    raw->sessions.emplace(id, session);
    const TlsClientOptions& tls = raw->options.tls;
    session->Connect(raw->options.host, raw->options.port, std::move(target), std::move(headers),
                     raw->tls, tls.server_name.empty() ? raw->options.host : tls.server_name);
  });
  if (!posted) {  // Only after the destructor began; nothing will run.
    std::lock_guard lock(impl->mu);
    --impl->open;
  }
  return parts.handle;
}

size_t WebSocketClient::open_connections() const {
  std::lock_guard lock(impl_->mu);
  return impl_->open;
}

}  // namespace swiftlet::http
