#include "server/request_log.h"

#include <chrono>
#include <cmath>
#include <ctime>

#include <nlohmann/json.hpp>

namespace swiftlet::server {
namespace {


double Round3(double v) { return std::round(v * 1000.0) / 1000.0; }

}  // namespace

std::string UtcTimestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  return buf;
}

std::string RequestLog::Format(const RequestLogEntry& e) const {
  nlohmann::ordered_json j;
  j["time"] = UtcTimestamp();
  j["id"] = e.id;
  j["method"] = e.method.substr(0, 16);
  j["endpoint"] = e.endpoint.substr(0, 256);
  j["status"] = e.status;
  if (e.prompt_tokens >= 0) j["prompt_tokens"] = e.prompt_tokens;
  if (e.completion_tokens >= 0) j["completion_tokens"] = e.completion_tokens;
  if (e.cached_tokens >= 0) j["cached_tokens"] = e.cached_tokens;
  if (e.queue_ms >= 0) j["queue_ms"] = Round3(e.queue_ms);
  if (e.ttft_ms >= 0) j["ttft_ms"] = Round3(e.ttft_ms);
  if (e.ttft_estimate_ms >= 0) j["ttft_estimate_ms"] = Round3(e.ttft_estimate_ms);
  j["total_ms"] = Round3(e.total_ms);
  if (!e.key_id.empty()) j["key"] = e.key_id;
  if (!e.finish.empty()) j["finish"] = e.finish;
  if (!e.model.empty()) j["model"] = e.model.substr(0, 256);
  if (log_content_) {
    j["prompt"] = e.prompt;
    j["output"] = e.output;
  }
  // Paths and content may hold invalid UTF-8: replace rather than throw.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RequestLog::RequestLog(std::FILE* out, bool log_content, size_t max_queued_bytes)
    : log_content_(log_content),
      enabled_(out != nullptr),
      writer_(out != nullptr ? fileno(out) : -1, max_queued_bytes) {
  // What stdio already holds for the descriptor goes first.
  if (out != nullptr) std::fflush(out);
}

void RequestLog::Write(const RequestLogEntry& entry) {
  if (enabled_) writer_.Write(Format(entry));
}

}  // namespace swiftlet::server
