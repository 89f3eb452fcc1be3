// One site as the gateway holds it: its address, what the health polls and
// live traffic taught us (gateway/site_health.h, under a mutex), the
// clients that talk to it, and its counters for /metrics.
//
// Clients: one HttpClient for proxied requests, one for health polls (its
// own short timeouts, so a poll never waits behind a long generation), and
// a WebSocketClient made on first use. Each client owns an I/O thread, and
// destroying a client joins it, so a Site must never be destroyed on one of
// its own clients' threads: SiteTable (gateway/site_table.h) keeps a
// reference to every Site and releases it only from a control thread, after
// StopClients.
//
// Threads: every method is thread-safe.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "gateway/latency_histogram.h"
#include "gateway/site_client_options.h"
#include "gateway/site_config.h"
#include "gateway/site_health.h"
#include "http/client.h"
#include "http/websocket.h"
#include "http/websocket_client.h"

namespace swiftlet::gateway {

// How a proxied attempt ended, for the counters.
enum class ResponseClass { k2xx, k3xx, k4xx, k429, k5xx, kError };
inline constexpr size_t kResponseClasses = 6;
const char* ResponseClassName(ResponseClass c);  // "2xx", ..., "429", "5xx", "error"
ResponseClass ClassOf(int http_status);          // 0: kError

// Why a request left a site for another.
enum class FailoverReason { kConnect, k5xx, k429 };
inline constexpr size_t kFailoverReasons = 3;
const char* FailoverReasonName(FailoverReason r);  // "connect", "5xx", "429"

struct SiteCounters {
  std::atomic<uint64_t> attempts{0};  // Requests sent here (the chosen site).
  std::array<std::atomic<uint64_t>, kResponseClasses> responses{};  // Answers passed to clients.
  std::array<std::atomic<uint64_t>, kFailoverReasons> failovers{};  // Away from here.
  std::atomic<uint64_t> stream_errors{0};  // SSE streams that broke after the first byte.
  std::atomic<uint64_t> websockets{0};     // WebSockets relayed here.
  std::atomic<uint64_t> websockets_moved{0};
  // Time the gateway added to requests answered from here: everything from
  // receiving the request to its first byte out, minus the site's own time
  // on the attempt that answered (failed attempts count as added).
  LatencyHistogram added_latency;
};

// A consistent view of one site at one moment.
struct SiteView {
  std::string name;
  std::string url;
  SiteState state = SiteState::kStarting;
  BreakerState breaker = BreakerState::kClosed;
  bool eligible = false;
  bool rtt_known = false;
  double rtt_ms = 0;
  double wait_ms = 0;
  int64_t in_flight = 0;
  double score_ms = 0;
  int64_t retry_after_left_ms = 0;
  int consecutive_poll_failures = 0;
  uint64_t ejections = 0;
  uint64_t breaker_trips = 0;
  std::string last_error;
};

class Site {
 public:
  Site(SiteSpec spec, const HealthPolicy& policy, const SiteClientOptions& options);
  ~Site();

  Site(const Site&) = delete;
  Site& operator=(const Site&) = delete;

  const SiteSpec& spec() const { return spec_; }
  const std::string& name() const { return spec_.name; }

  // Proxied requests (http/client.h semantics). Send returns nullopt, and
  // runs no callback, once StopClients was called.
  std::optional<uint64_t> Send(http::ClientRequest request, http::ClientCallbacks callbacks);
  void Cancel(uint64_t id);
  // Health polls, on the poll client.
  bool SendPoll(http::ClientRequest request, http::ClientCallbacks callbacks);
  // A WebSocket to the site (http/websocket_client.h); null after StopClients.
  std::shared_ptr<http::WebSocket> ConnectWebSocket(std::string target, http::Headers headers,
                                                    http::WebSocketClientHandlers handlers);

  // Destroys the clients (each cancels what it has in flight, running the
  // callbacks, and joins its thread). Call from a thread that is none of
  // this site's clients' threads. Idempotent.
  void StopClients();

  // Health, under the site's mutex (gateway/site_health.h).
  void PollReady(int64_t now_ns, int64_t rtt_ns, bool fresh_connection);
  void PollDraining(int64_t now_ns, int64_t rtt_ns, bool fresh_connection);
  void PollFailed(int64_t now_ns, std::string error);
  void SetPublishedWait(double wait_ms, bool draining);
  void RetryAfter(int64_t now_ns, int64_t delay_ns);
  // Live traffic: Begin when sending an attempt here (counts it in
  // flight); then exactly one of the three ends.
  void BeginRequest(int64_t now_ns);
  void EndRequestOk(int64_t now_ns, bool freed_slot = false);
  void EndRequestFailed(int64_t now_ns, std::string error);
  void EndRequestAbandoned();

  // For choosing: eligible now, and its score with the current in-flight
  // count. Score only meaningful when eligible.
  bool Eligible(int64_t now_ns, double* score_ms) const;
  // SiteHealth::BenchedUntil.
  int64_t BenchedUntil(int64_t now_ns) const;
  // A stream already here may stay: up, not draining, breaker not open.
  bool Healthy(int64_t now_ns, double* score_ms) const;
  SiteView View(int64_t now_ns) const;

  int64_t in_flight() const { return in_flight_.load(std::memory_order_acquire); }
  SiteCounters& counters() { return counters_; }
  const SiteCounters& counters() const { return counters_; }

  // At most one poll outstanding per site: TryStartPoll claims the slot.
  bool TryStartPoll() { return !polling_.exchange(true, std::memory_order_acq_rel); }
  void EndPoll() { polling_.store(false, std::memory_order_release); }

 private:
  const SiteSpec spec_;
  const SiteClientOptions options_;
  mutable std::mutex mu_;
  SiteHealth health_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> in_flight_{0};
  std::atomic<bool> polling_{false};
  SiteCounters counters_;

  // Clients: replaced by null in StopClients; calls on them are made under
  // clients_mu_ (they only post to the client's thread, never block).
  std::mutex clients_mu_;
  std::unique_ptr<http::HttpClient> proxy_ ABSL_GUARDED_BY(clients_mu_);
  std::unique_ptr<http::HttpClient> poller_ ABSL_GUARDED_BY(clients_mu_);
  std::unique_ptr<http::WebSocketClient> websockets_ ABSL_GUARDED_BY(clients_mu_);
  bool stopped_ ABSL_GUARDED_BY(clients_mu_) = false;
};

}  // namespace swiftlet::gateway
