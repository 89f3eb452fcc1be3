// One structured line per request (JSON, on stderr by default): id,
// endpoint, status, tokens in and out, queue time, TTFT and total time.
// Prompt and output text only when the operator asks (--log-content).
//
// Thread-safe: each line is written with one call under a mutex.
#pragma once

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace swiftlet::server {

struct RequestLogEntry {
  std::string id;        // Response id, or a request number for other endpoints.
  std::string method;
  std::string endpoint;  // The path (truncated to 256 bytes when written).
  int status = 0;
  int64_t prompt_tokens = -1;      // -1: not a generation (left out).
  int64_t completion_tokens = -1;
  int64_t cached_tokens = -1;
  double queue_ms = -1;            // -1: left out.
  double ttft_ms = -1;
  double total_ms = 0;             // Received until answered.
  std::string finish;              // Engine finish reason, when generated.
  std::string prompt;              // Written only with log_content.
  std::string output;
};

class RequestLog {
 public:
  // `out` is not owned; null disables the log.
  RequestLog(std::FILE* out, bool log_content) : out_(out), log_content_(log_content) {}

  bool log_content() const { return log_content_; }
  void Write(const RequestLogEntry& entry);
  // The line Write would print (no newline), for tests.
  std::string Format(const RequestLogEntry& entry) const;

 private:
  std::FILE* const out_;
  const bool log_content_;
  std::mutex mu_;
};

}  // namespace swiftlet::server
