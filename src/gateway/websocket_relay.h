// One live stream relayed between a client and a site: the client's
// WebSocket upgrade is held until the site's upgrade succeeds (so a site
// that refuses or cannot be reached fails over, like a request before its
// first byte), then every text message is passed on both ways and a close
// on either side closes the other with the same code.
//
// Affinity: the stream goes to the site its `stream_id` query parameter is
// pinned to while that site is fit, and stays on its site while the site is
// up, not draining, its breaker not open, and within 2x the best score.
// When that stops being true (the health tick calls CheckSite), the client
// is closed with 1012 (service restart) so it reconnects, and the reconnect
// is routed to a better site. A stream whose site vanishes is closed the
// same way.
//
// Threads: created on a server I/O thread; then driven by the site's
// WebSocket client thread, the client connection's I/O thread and the
// health tick, under one mutex.
#pragma once

#include <memory>

#include "gateway/gateway_context.h"
#include "http/message.h"
#include "http/response_writer.h"

namespace swiftlet::gateway {

// Relays `request` (IsWebSocketUpgrade is true for it).
void StartWebSocketRelay(GatewayContext& context, http::HttpRequest request,
                         std::shared_ptr<http::ResponseWriter> writer);

class WebSocketRelay {
 public:
  virtual ~WebSocketRelay() = default;
  // The health tick: moves the stream (closing the client with 1012) if
  // its site is no longer fit. `best_ms`: the best eligible score now.
  virtual void CheckSite(std::optional<double> best_ms) = 0;
};

}  // namespace swiftlet::gateway
