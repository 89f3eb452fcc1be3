// Internal to gateway/: what one proxied request or relayed WebSocket needs
// from the gateway that owns it. The Gateway (gateway/gateway.h) outlives
// every ProxyCall and WebSocketRelay: it stops the sites' clients, which
// ends them all, before it lets go of this.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/clock.h"
#include "gateway/affinity.h"
#include "gateway/delayed_tasks.h"
#include "gateway/gateway_options.h"
#include "gateway/site.h"
#include "gateway/site_table.h"

namespace swiftlet::gateway {

class WebSocketRelay;

// Counters of the gateway itself (per-site ones live in Site).
struct GatewayCounters {
  std::atomic<uint64_t> requests{0};  // Proxied requests received.
  // Answers the gateway made itself (no site answered): by class.
  std::array<std::atomic<uint64_t>, kResponseClasses> own_responses{};
  std::atomic<uint64_t> no_site{0};      // No eligible site at all.
  std::atomic<uint64_t> overloaded{0};   // Past max_in_flight / max_websockets.
  std::atomic<uint64_t> client_gone{0};  // The client left before the answer ended.
  std::atomic<uint64_t> held{0};         // Requests held for a benched site (each hold).
  std::atomic<uint64_t> reloads{0};
  std::atomic<uint64_t> reload_errors{0};
};

struct GatewayContext {
  GatewayContext(const GatewayOptions& o, SiteTable& t, const Clock& c, DelayedTasks& d)
      : options(o), table(t), clock(c), delayed(d), affinity(o.affinity_entries, o.affinity_ttl.count() * 1'000'000) {}

  const GatewayOptions& options;
  SiteTable& table;
  const Clock& clock;
  DelayedTasks& delayed;  // Held requests (GatewayOptions::max_hold).
  AffinityMap affinity;
  GatewayCounters counters;
  std::atomic<bool> stopping{false};
  std::atomic<int64_t> in_flight{0};         // ProxyCalls alive.
  std::atomic<int64_t> websockets_open{0};   // WebSocketRelays alive.

  // Relays, so the health tick can move a stream off a site that failed.
  std::mutex relays_mu;
  std::vector<std::weak_ptr<WebSocketRelay>> relays ABSL_GUARDED_BY(relays_mu);
};

}  // namespace swiftlet::gateway
