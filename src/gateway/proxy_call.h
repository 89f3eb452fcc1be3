// One proxied HTTP request, from the client's request to the end of the
// answer, across as many sites as failover takes.
//
// Each attempt goes to the site SiteTable::Choose picks (sites already
// tried excluded; a request carrying a stream_id goes to its pinned site
// while that one is fit). Before the first byte reaches the client, a
// connect error or timeout, a 5xx, or a 429 (whose Retry-After benches the
// site) sends the request on to the next site, up to max_attempts; when none
// is left the client gets the last site's answer, or the gateway's own 502
// or 503. A streamed (SSE) answer is held back until its first event, so a
// site that fails between its headers and its first token still fails over;
// then every event is passed on as it arrives. If the stream breaks after
// that, the client gets an OpenAI-shaped error event, then the end of the
// stream: never a silent cut. A client that leaves cancels the site's
// request, so the site stops generating.
//
// Threads: created on a server I/O thread; then driven by the site
// clients' callbacks (one attempt at a time) and the writer's OnClose. Its
// state is under one mutex; the lock order is ProxyCall, then SiteTable,
// then Site.
#pragma once

#include <memory>

#include "gateway/gateway_context.h"
#include "http/message.h"
#include "http/response_writer.h"

namespace swiftlet::gateway {

// Proxies `request` (its path is not one of the gateway's own).
void StartProxyCall(GatewayContext& context, http::HttpRequest request,
                    std::shared_ptr<http::ResponseWriter> writer);

}  // namespace swiftlet::gateway
