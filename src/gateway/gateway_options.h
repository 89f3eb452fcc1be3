// Everything `swiftlet gateway` can be told, with the defaults the issue
// asks for (polls every 1 s with a 500 ms timeout, eject after 3 failures,
// readmit after 2, three attempts per request).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/clock.h"
#include "gateway/site_client_options.h"
#include "gateway/site_health.h"

namespace swiftlet::gateway {

struct GatewayOptions {
  // Listening side (http/server.h bounds every client).
  std::string host = "127.0.0.1";
  uint16_t port = 8090;  // 0: an ephemeral port
  int io_threads = 2;
  size_t max_connections = 10000;
  size_t max_header_bytes = 16 << 10;
  size_t max_body_bytes = 8 << 20;
  std::chrono::milliseconds header_timeout{10'000};
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds idle_timeout{60'000};
  // HTTPS (and wss) towards the clients when a certificate is given: the
  // PEM chain and its unencrypted key, read at Start and again at
  // Gateway::ReloadTls. Empty: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;

  // Proxied requests in flight at once; past it a request gets 503 at once.
  size_t max_in_flight = 4096;
  // Live WebSockets relayed at once; past it an upgrade gets 503.
  size_t max_websockets = 4096;
  // Sites one request may try (failover before the first byte) per round.
  int max_attempts = 3;
  // When every site that could take a request is benched by a 429's
  // Retry-After, the request waits in the gateway for the first bench to
  // end (then tries again, a new round) as long as it has been in the
  // gateway less than this; past it the client gets the last refusal.
  // 0: refuse at once.
  std::chrono::milliseconds max_hold{1'000};

  std::chrono::milliseconds poll_interval{1'000};
  HealthPolicy health;
  SiteClientOptions clients;  // poll_timeout 500 ms by default

  // Stream affinity: streams remembered at most, and for how long unused.
  size_t affinity_entries = 100'000;
  std::chrono::milliseconds affinity_ttl{600'000};
  // Client-side WebSocket limits (towards the users).
  size_t websocket_max_message_bytes = 64 << 10;

  // Time for scores, polls and the added-latency figures; null: the system
  // clock (tests pass a FakeClock for the state logic only).
  const Clock* clock = nullptr;
};

}  // namespace swiftlet::gateway
