// What the server adds to the engine's metrics on /metrics: requests by
// endpoint and HTTP status, open connections, process memory, and a model
// info line. Endpoint labels come from a fixed list (the routes), so a
// client sending random paths cannot grow the label set.
//
// Thread-safe: any thread records, any thread formats.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "engine/metrics.h"
#include "server/prometheus_text.h"

namespace swiftlet::server {

class ServerMetrics {
 public:
  // `endpoint` should be a route path; anything else is counted as "other".
  void CountRequest(std::string_view endpoint, int http_status);
  uint64_t RequestCount(std::string_view endpoint, int http_status) const;

  // The whole /metrics page: the hot models' engine metrics (labeled by
  // model), then the server's; `model_names` are every model served.
  std::string Format(const std::vector<LabeledEngineMetrics>& engines, const std::vector<std::string>& model_names,
                     size_t open_connections, uint64_t log_lines_dropped) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_ ABSL_GUARDED_BY(mu_);
};

// Resident set size of this process in bytes (0 if /proc is unreadable).
uint64_t ProcessResidentBytes();

// The route paths the request counter labels by name.
bool IsKnownEndpoint(std::string_view path);

}  // namespace swiftlet::server
