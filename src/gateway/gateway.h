// swiftlet gateway: one HTTP front for several sites, each running swiftlet
// serve. Proxies the API (requests with SSE streaming, and the live
// translation WebSockets) to the site expected to answer first, fails over
// before the first byte, and serves its own pages:
//
//   GET /health   200 while the gateway runs
//   GET /ready    200 while some site is eligible, else 503
//   GET /sites    JSON per site: state, breaker, RTT, wait, in flight, score
//   GET /metrics  Prometheus text
//
// Every other request is proxied. Responses from a site carry
// x-swiftlet-site: NAME; the gateway's own refusals (no site, overload)
// are OpenAI-shaped errors without it.
//
// Threads: Start, ReplaceSites, ReloadTls and Stop from control threads
// (not from an I/O thread); the page functions from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "gateway/gateway_options.h"
#include "gateway/site_config.h"

namespace swiftlet::http {
class HttpServer;
class ResponseWriter;
struct HttpRequest;
}  // namespace swiftlet::http

namespace swiftlet::gateway {

struct GatewayContext;
class DelayedTasks;
class HealthPoller;
class SiteTable;

class Gateway {
 public:
  explicit Gateway(GatewayOptions options);
  // Stop(0) if still running.
  ~Gateway();

  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // Takes the sites (CheckSiteList), polls each once (waiting at most the
  // poll timeout plus a second, so the first requests find sites scored),
  // then listens. Error if the sites are bad, the CA file
  // (options.clients.ca_file) or the certificate and key do not load, or the
  // address cannot be bound.
  absl::Status Start(const std::vector<SiteSpec>& sites);

  // The bound port, after Start.
  uint16_t port() const;

  // Swaps in a new site list (a reloaded sites file); see SiteTable::Replace.
  // The old list stays on error. Thread-safe.
  absl::Status ReplaceSites(const std::vector<SiteSpec>& sites);
  // Counts a failed reload in /metrics (the caller could not read the file).
  void CountReloadError();

  // True when the listener speaks HTTPS (options.tls_cert_file given).
  bool tls() const;
  // Reads the listener's certificate and key again (http::HttpServer::
  // ReloadTls): new connections use them; on error the old ones stay.
  // FailedPrecondition without TLS or before Start.
  absl::Status ReloadTls();

  // Stops accepting, lets requests in flight finish for up to `grace`, then
  // cancels the rest and stops polling. Idempotent.
  void Stop(std::chrono::milliseconds grace);

  std::string SitesPage() const;
  std::string MetricsPage() const;

 private:
  void Handle(http::HttpRequest request, std::shared_ptr<http::ResponseWriter> writer);
  void Tick();

  const GatewayOptions options_;
  std::unique_ptr<SiteTable> table_;
  std::unique_ptr<DelayedTasks> delayed_;
  std::unique_ptr<GatewayContext> ctx_;
  std::unique_ptr<HealthPoller> poller_;
  std::unique_ptr<http::HttpServer> server_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace swiftlet::gateway
