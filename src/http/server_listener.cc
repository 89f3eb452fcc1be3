// The listening side of HttpServer: binding, the accept loop (each socket
// becomes a connection of server.cc, over TLS when the server has a
// certificate), graceful Stop, and certificate reload. Asio without Beast.
#include <utility>  // Before asio: Boost 1.74's awaitable.hpp needs std::exchange.

#include <algorithm>
#include <future>
#include <string>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>

#include "core/status.h"
#include "core/str_cat.h"
#include "http/server.h"
#include "http/server_core.h"

namespace swiftlet::http {
namespace asio = boost::asio;
using boost::system::error_code;
using tcp = asio::ip::tcp;
using internal::NetStream;
using internal::ServerConnection;
using internal::ServerCore;
using internal::SslContext;
using internal::Strand;
using internal::MakeServerConnection;

namespace {

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
    std::shared_ptr<ServerConnection> connection;
    {
      std::lock_guard lock(core->mu);
      uint64_t id = core->next_id++;
      NetStream stream = tls ? NetStream(std::move(socket), std::move(tls)) : NetStream(std::move(socket));
      connection = MakeServerConnection(core, strand, std::move(stream), id);
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
    std::vector<std::shared_ptr<ServerConnection>> open;
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
  for_each_open([](ServerConnection& c) { c.Drain(); });
  wait_closed(grace);
  for_each_open([](ServerConnection& c) { c.Close(); });
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
