// The gateway's own pages: GET /sites (JSON: per site its state, breaker,
// RTT, published wait, in-flight count and score) and GET /metrics
// (Prometheus text format 0.0.4). Plain functions over snapshots; they
// may be called from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gateway/gateway_context.h"
#include "gateway/site.h"

namespace swiftlet::gateway {

std::string SitesJson(const std::vector<SiteView>& sites);

std::string MetricsText(const GatewayContext& context, const std::vector<std::shared_ptr<Site>>& sites,
                        int64_t now_ns);

}  // namespace swiftlet::gateway
