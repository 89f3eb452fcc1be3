#include "gateway/gateway.h"

#include <utility>

#include "core/str_cat.h"
#include "gateway/delayed_tasks.h"
#include "gateway/forwarding.h"
#include "gateway/gateway_context.h"
#include "gateway/health_poller.h"
#include "gateway/proxy_call.h"
#include "gateway/site_table.h"
#include "gateway/status_pages.h"
#include "gateway/websocket_relay.h"
#include "http/server.h"
#include "http/tls_options.h"
#include "http/websocket.h"

namespace swiftlet::gateway {
namespace {

const Clock& ClockOf(const GatewayOptions& o) { return o.clock != nullptr ? *o.clock : SystemClock(); }

http::ErrorBody JsonErrorBody(int status, std::string_view message) {
  return {"application/json", ErrorJson(status, message, "")};
}

}  // namespace

Gateway::Gateway(GatewayOptions options)
    : options_(std::move(options)),
      table_(std::make_unique<SiteTable>(options_.health, options_.clients, ClockOf(options_))),
      delayed_(std::make_unique<DelayedTasks>()),
      ctx_(std::make_unique<GatewayContext>(options_, *table_, ClockOf(options_), *delayed_)),
      poller_(std::make_unique<HealthPoller>(*table_, options_.poll_interval, [this] { Tick(); })) {}

Gateway::~Gateway() { Stop(std::chrono::milliseconds(0)); }

absl::Status Gateway::Start(const std::vector<SiteSpec>& sites) {
  if (started_) return absl::FailedPreconditionError("the gateway was started before");
  SWIFTLET_RETURN_IF_ERROR(CheckSiteList(sites));
  if (!options_.clients.ca_file.empty()) {
    // Checked up front, even before any https site: a bad file would
    // otherwise only show as every https site's connections failing.
    http::TlsClientOptions tls;
    tls.use_tls = true;
    tls.ca_file = options_.clients.ca_file;
    if (absl::Status s = http::CheckTlsClientOptions(tls); !s.ok()) {
      return absl::InvalidArgumentError(StrCat("--ca: ", s.message()));
    }
  }
  if (options_.tls_cert_file.empty() != options_.tls_key_file.empty()) {
    return absl::InvalidArgumentError(options_.tls_cert_file.empty() ? "--tls-key needs --tls-cert"
                                                                     : "--tls-cert needs --tls-key");
  }
  http::TlsServerOptions server_tls;
  server_tls.cert_file = options_.tls_cert_file;
  server_tls.key_file = options_.tls_key_file;
  if (server_tls.enabled()) {
    // Before the first poll, so a bad file fails fast and starts nothing.
    if (absl::Status s = http::CheckTlsServerOptions(server_tls); !s.ok()) {
      return absl::InvalidArgumentError(StrCat("--tls-cert/--tls-key: ", s.message()));
    }
  }
  started_ = true;
  table_->Replace(sites);
  poller_->Start();
  poller_->WaitFirstRound(options_.clients.poll_timeout + std::chrono::seconds(1));

  http::HttpServerOptions so;
  so.host = options_.host;
  so.port = options_.port;
  so.io_threads = options_.io_threads;
  so.max_connections = options_.max_connections;
  so.max_header_bytes = options_.max_header_bytes;
  so.max_body_bytes = options_.max_body_bytes;
  so.header_timeout = options_.header_timeout;
  so.body_timeout = options_.body_timeout;
  so.idle_timeout = options_.idle_timeout;
  so.error_body = JsonErrorBody;
  so.tls = server_tls;
  server_ = std::make_unique<http::HttpServer>(
      so, [this](http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
        Handle(std::move(request), std::move(writer));
      });
  if (absl::Status s = server_->Start(); !s.ok()) {
    server_.reset();
    delayed_->Stop();
    poller_->Stop();
    table_->Shutdown();
    stopped_ = true;
    return s;
  }
  return absl::OkStatus();
}

uint16_t Gateway::port() const { return server_ != nullptr ? server_->port() : 0; }

absl::Status Gateway::ReplaceSites(const std::vector<SiteSpec>& sites) {
  SWIFTLET_RETURN_IF_ERROR(CheckSiteList(sites));
  table_->Replace(sites);
  ctx_->counters.reloads.fetch_add(1, std::memory_order_relaxed);
  // New sites are polled at once rather than at the next tick.
  for (const auto& site : table_->sites()) poller_->PollSite(site);
  return absl::OkStatus();
}

void Gateway::CountReloadError() { ctx_->counters.reload_errors.fetch_add(1, std::memory_order_relaxed); }

bool Gateway::tls() const { return !options_.tls_cert_file.empty(); }

absl::Status Gateway::ReloadTls() {
  if (!tls() || server_ == nullptr) return absl::FailedPreconditionError("the gateway does not serve https");
  return server_->ReloadTls();
}

void Gateway::Stop(std::chrono::milliseconds grace) {
  if (stopped_) return;
  stopped_ = true;
  ctx_->stopping.store(true, std::memory_order_release);
  // The server first: its grace lets answers in flight end; past it their
  // connections close, which cancels their site requests.
  if (server_ != nullptr) server_->Stop(grace);
  // Held requests try once more now, find the gateway stopping and answer.
  delayed_->Stop();
  poller_->Stop();
  // Then the sites' clients: what is still in flight is cancelled and its
  // callbacks run now, while the context they use is alive.
  table_->Shutdown();
}

std::string Gateway::SitesPage() const {
  std::vector<SiteView> views;
  const int64_t now = ctx_->clock.NowNs();
  for (const auto& site : table_->sites()) views.push_back(site->View(now));
  return SitesJson(views);
}

std::string Gateway::MetricsPage() const { return MetricsText(*ctx_, table_->sites(), ctx_->clock.NowNs()); }

void Gateway::Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer) {
  const std::string& path = request.path;
  const bool own = path == "/health" || path == "/ready" || path == "/sites" || path == "/metrics";
  if (own) {
    if (request.method != "GET" && request.method != "HEAD") {
      writer->Respond(405, {{"Content-Type", "application/json"}, {"Allow", "GET"}},
                      ErrorJson(405, "the gateway's own pages take GET", ""));
      return;
    }
    if (path == "/health") {
      writer->Respond(200, {{"Content-Type", "application/json"}}, R"({"status":"ok"})");
    } else if (path == "/ready") {
      const bool ready = !ctx_->stopping.load() && table_->BestScore().has_value();
      writer->Respond(ready ? 200 : 503, {{"Content-Type", "application/json"}},
                      ready ? R"({"status":"ready"})" : ErrorJson(503, "no site is eligible", "no_site_available"));
    } else if (path == "/sites") {
      writer->Respond(200, {{"Content-Type", "application/json"}}, SitesPage());
    } else {
      writer->Respond(200, {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}}, MetricsPage());
    }
    return;
  }
  if (http::IsWebSocketUpgrade(request)) return StartWebSocketRelay(*ctx_, std::move(request), std::move(writer));
  StartProxyCall(*ctx_, std::move(request), std::move(writer));
}

void Gateway::Tick() {
  table_->CollectRetired();
  std::vector<std::shared_ptr<WebSocketRelay>> relays;
  {
    std::lock_guard<std::mutex> lock(ctx_->relays_mu);
    auto& list = ctx_->relays;
    for (auto it = list.begin(); it != list.end();) {
      if (auto r = it->lock()) {
        relays.push_back(std::move(r));
        ++it;
      } else {
        it = list.erase(it);
      }
    }
  }
  if (relays.empty()) return;
  const std::optional<double> best = table_->BestScore();
  for (const auto& r : relays) r->CheckSite(best);
}

}  // namespace swiftlet::gateway
