#include "gateway/site.h"

#include <utility>

namespace swiftlet::gateway {

const char* ResponseClassName(ResponseClass c) {
  switch (c) {
    case ResponseClass::k2xx: return "2xx";
    case ResponseClass::k3xx: return "3xx";
    case ResponseClass::k4xx: return "4xx";
    case ResponseClass::k429: return "429";
    case ResponseClass::k5xx: return "5xx";
    case ResponseClass::kError: return "error";
  }
  return "?";
}

ResponseClass ClassOf(int http_status) {
  if (http_status == 429) return ResponseClass::k429;
  if (http_status >= 500 && http_status <= 599) return ResponseClass::k5xx;
  if (http_status >= 400) return ResponseClass::k4xx;
  if (http_status >= 300) return ResponseClass::k3xx;
  if (http_status >= 200) return ResponseClass::k2xx;
  return ResponseClass::kError;
}

const char* FailoverReasonName(FailoverReason r) {
  switch (r) {
    case FailoverReason::kConnect: return "connect";
    case FailoverReason::k5xx: return "5xx";
    case FailoverReason::k429: return "429";
  }
  return "?";
}

namespace {

http::TlsClientOptions TlsOf(const SiteSpec& spec, const SiteClientOptions& options) {
  http::TlsClientOptions tls;
  tls.use_tls = spec.scheme == Scheme::kHttps;
  if (tls.use_tls) tls.ca_file = options.ca_file;
  return tls;
}

}  // namespace

Site::Site(SiteSpec spec, const HealthPolicy& policy, const SiteClientOptions& options)
    : spec_(std::move(spec)), options_(options), health_(policy) {
  http::HttpClientOptions proxy;
  proxy.host = spec_.host;
  proxy.port = spec_.port;
  proxy.connect_timeout = options.connect_timeout;
  proxy.idle_timeout = options.upstream_idle_timeout;
  proxy.request_timeout = options.upstream_request_timeout;
  proxy.max_header_bytes = options.max_header_bytes;
  proxy.max_body_bytes = options.max_response_bytes;
  proxy.max_event_bytes = options.max_event_bytes;
  proxy.max_idle_connections = options.max_idle_connections;
  proxy.tls = TlsOf(spec_, options);
  proxy_ = std::make_unique<http::HttpClient>(proxy);

  http::HttpClientOptions poll = proxy;
  poll.connect_timeout = options.poll_timeout;
  poll.idle_timeout = options.poll_timeout;
  poll.request_timeout = options.poll_timeout;
  poll.max_body_bytes = 64 << 10;  // /ready and /load are small.
  poll.max_idle_connections = 2;
  poller_ = std::make_unique<http::HttpClient>(poll);
}

Site::~Site() { StopClients(); }

std::optional<uint64_t> Site::Send(http::ClientRequest request, http::ClientCallbacks callbacks) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (proxy_ == nullptr) return std::nullopt;
  return proxy_->Send(std::move(request), std::move(callbacks));
}

void Site::Cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (proxy_ != nullptr) proxy_->Cancel(id);
}

bool Site::SendPoll(http::ClientRequest request, http::ClientCallbacks callbacks) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (poller_ == nullptr) return false;
  poller_->Send(std::move(request), std::move(callbacks));
  return true;
}

std::shared_ptr<http::WebSocket> Site::ConnectWebSocket(std::string target, http::Headers headers,
                                                        http::WebSocketClientHandlers handlers) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  if (stopped_) return nullptr;
  if (websockets_ == nullptr) {
    // Made on first use: most sites never carry a live stream through this
    // gateway, and each client is a thread.
    http::WebSocketClientOptions o;
    o.host = spec_.host;
    o.port = spec_.port;
    o.socket.max_message_bytes = options_.websocket_max_message_bytes;
    o.socket.ping_interval = options_.websocket_ping_interval;
    o.socket.handshake_timeout = options_.connect_timeout;
    o.tls = TlsOf(spec_, options_);
    websockets_ = std::make_unique<http::WebSocketClient>(o);
  }
  return websockets_->Connect(std::move(target), std::move(headers), std::move(handlers));
}

void Site::StopClients() {
  std::unique_ptr<http::HttpClient> proxy, poller;
  std::unique_ptr<http::WebSocketClient> websockets;
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    stopped_ = true;
    proxy = std::move(proxy_);
    poller = std::move(poller_);
    websockets = std::move(websockets_);
  }
  // Destroyed outside the lock: their callbacks (run as they cancel) may
  // call back into this site.
  websockets.reset();
  proxy.reset();
  poller.reset();
}

void Site::PollReady(int64_t now_ns, int64_t rtt_ns, bool fresh_connection) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.PollReady(now_ns, rtt_ns, fresh_connection);
}

void Site::PollDraining(int64_t now_ns, int64_t rtt_ns, bool fresh_connection) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.PollDraining(now_ns, rtt_ns, fresh_connection);
}

void Site::PollFailed(int64_t now_ns, std::string error) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.PollFailed(now_ns, std::move(error));
}

void Site::SetPublishedWait(double wait_ms, bool draining) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.SetPublishedWait(wait_ms, draining);
}

void Site::RetryAfter(int64_t now_ns, int64_t delay_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  health_.RetryAfter(now_ns, delay_ns);
}

void Site::BeginRequest(int64_t now_ns) {
  in_flight_.fetch_add(1, std::memory_order_acq_rel);
  counters_.attempts.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  health_.Chosen(now_ns);
}

void Site::EndRequestOk(int64_t now_ns, bool freed_slot) {
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(mu_);
  health_.RequestSucceeded(now_ns, freed_slot);
}

void Site::EndRequestFailed(int64_t now_ns, std::string error) {
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(mu_);
  health_.RequestFailed(now_ns, std::move(error));
}

void Site::EndRequestAbandoned() {
  in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  std::lock_guard<std::mutex> lock(mu_);
  health_.RequestAbandoned();
}

bool Site::Eligible(int64_t now_ns, double* score_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (score_ms != nullptr) *score_ms = health_.ScoreMs(in_flight());
  return health_.Eligible(now_ns);
}

int64_t Site::BenchedUntil(int64_t now_ns) const {
  std::lock_guard<std::mutex> lock(mu_);
  return health_.BenchedUntil(now_ns);
}

bool Site::Healthy(int64_t now_ns, double* score_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (score_ms != nullptr) *score_ms = health_.ScoreMs(in_flight());
  return health_.state() == SiteState::kUp && health_.rtt_known() &&
         health_.breaker(now_ns) != BreakerState::kOpen;
}

SiteView Site::View(int64_t now_ns) const {
  SiteView v;
  v.name = spec_.name;
  v.url = spec_.url;
  v.in_flight = in_flight();
  std::lock_guard<std::mutex> lock(mu_);
  v.state = health_.state();
  v.breaker = health_.breaker(now_ns);
  v.eligible = health_.Eligible(now_ns);
  v.rtt_known = health_.rtt_known();
  v.rtt_ms = health_.rtt_ms();
  v.wait_ms = health_.wait_ms();
  v.score_ms = health_.ScoreMs(v.in_flight);
  v.retry_after_left_ms = health_.retry_after_left_ns(now_ns) / 1'000'000;
  v.consecutive_poll_failures = health_.consecutive_poll_failures();
  v.ejections = health_.ejections();
  v.breaker_trips = health_.breaker_trips();
  v.last_error = health_.last_error();
  return v;
}

}  // namespace swiftlet::gateway
