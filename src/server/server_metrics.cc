#include "server/server_metrics.h"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "core/str_cat.h"
#include "server/prometheus_text.h"

namespace swiftlet::server {
namespace {

constexpr std::array<std::string_view, 20> kEndpoints = {
    "/v1/completions",      "/v1/chat/completions", "/v1/models",          "/v1/embeddings", "/tokenize",
    "/detokenize",          "/health",              "/ready",              "/load",          "/metrics",
    "/",                    "/v1/models/{id}",      "/stats",              "/v1/translate",  "/v1/translate/stream",
    "/v1/translate/cache",  "/v1/cache",            "/probe/download",     "/v1/models/{id}/load|unload",
    "other"};

}  // namespace

bool IsKnownEndpoint(std::string_view path) {
  for (std::string_view e : kEndpoints) {
    if (e == path) return true;
  }
  return false;
}

void ServerMetrics::CountRequest(std::string_view endpoint, int http_status) {
  std::string key(IsKnownEndpoint(endpoint) ? endpoint : "other");
  std::lock_guard<std::mutex> lock(mu_);
  requests_[{std::move(key), http_status}] += 1;
}

uint64_t ServerMetrics::RequestCount(std::string_view endpoint, int http_status) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = requests_.find({std::string(endpoint), http_status});
  return it == requests_.end() ? 0 : it->second;
}

uint64_t ProcessResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  if (!(statm >> size >> resident)) return 0;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string ServerMetrics::Format(const std::vector<LabeledEngineMetrics>& engines,
                                  const std::vector<std::string>& model_names, size_t open_connections,
                                  uint64_t log_lines_dropped) const {
  std::string out = FormatPrometheus(engines);
  out += "# HELP swiftlet_http_requests_total HTTP requests answered, by endpoint and status.\n";
  out += "# TYPE swiftlet_http_requests_total counter\n";
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, count] : requests_) {
      out += StrCat("swiftlet_http_requests_total{endpoint=\"", EscapePrometheusLabel(key.first),
                    "\",status=\"", key.second, "\"} ", count, "\n");
    }
  }
  out += "# HELP swiftlet_http_connections_open HTTP connections open now.\n";
  out += "# TYPE swiftlet_http_connections_open gauge\n";
  out += StrCat("swiftlet_http_connections_open ", open_connections, "\n");
  out += "# HELP swiftlet_log_lines_dropped_total Request log lines dropped because the log output "
         "did not keep up.\n";
  out += "# TYPE swiftlet_log_lines_dropped_total counter\n";
  out += StrCat("swiftlet_log_lines_dropped_total ", log_lines_dropped, "\n");
  out += "# HELP swiftlet_process_resident_memory_bytes Resident memory of the server process.\n";
  out += "# TYPE swiftlet_process_resident_memory_bytes gauge\n";
  out += StrCat("swiftlet_process_resident_memory_bytes ", ProcessResidentBytes(), "\n");
  out += "# HELP swiftlet_model_info The models served, hot or not (value always 1).\n";
  out += "# TYPE swiftlet_model_info gauge\n";
  for (const std::string& name : model_names) {
    out += StrCat("swiftlet_model_info{model=\"", EscapePrometheusLabel(name), "\"} 1\n");
  }
  return out;
}

}  // namespace swiftlet::server
