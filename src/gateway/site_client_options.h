// How the gateway's clients talk to a site: timeouts and size bounds for
// proxied requests, health polls and live streams. Plain values (no http/
// types), so the gateway's public headers stay free of the transport.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace swiftlet::gateway {

struct SiteClientOptions {
  std::chrono::milliseconds connect_timeout{2'000};
  // Longest silence from a site while a proxied request waits on it (for
  // the first token too, so generous).
  std::chrono::milliseconds upstream_idle_timeout{120'000};
  // A proxied request as a whole, stream included; 0: none.
  std::chrono::milliseconds upstream_request_timeout{0};
  std::chrono::milliseconds poll_timeout{500};
  size_t max_header_bytes = 64 << 10;
  size_t max_response_bytes = 16 << 20;  // A whole (non-SSE) response.
  size_t max_event_bytes = 1 << 20;      // One SSE event.
  size_t max_idle_connections = 256;     // Kept open per site for reuse.
  // Live streams towards the site: its messages (results) at most this
  // large, a ping every interval, the upgrade within connect_timeout.
  size_t websocket_max_message_bytes = 1 << 20;
  std::chrono::milliseconds websocket_ping_interval{15'000};
  // https sites (proxied requests, polls, wss relays): the authorities
  // their certificates must chain to, a PEM file read when a site's
  // clients are made (at start and for each site a reload adds); empty:
  // the system's trust store. The certificate must also name the site's
  // host (a DNS name, or an IP address in its IP SANs).
  std::string ca_file;
};

}  // namespace swiftlet::gateway
