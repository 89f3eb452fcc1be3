// One structured line per request (JSON, on stderr by default): id,
// endpoint, status, tokens in and out, queue time, TTFT and total time.
// Prompt and output text only when the operator asks (--log-content).
//
// Lines go out through an AsyncLineWriter (core/async_line_writer.h): Write
// only formats and queues, so the engine thread that completes a request
// never waits on stderr; when the queue is full the line is dropped and
// counted (swiftlet_log_lines_dropped_total).
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/async_line_writer.h"

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
  double ttft_estimate_ms = -1;    // Admission's prediction of ttft_ms.
  double total_ms = 0;             // Received until answered.
  std::string finish;              // Engine finish reason, when generated.
  std::string model;               // The model that served it, when one did.
  std::string key_id;              // The API key's id, when keys are on.
  std::string peer;                // Client address (the audit log's; not in the request log).
  std::string prompt;              // Written only with log_content.
  std::string output;
};

// Now, UTC, ISO 8601 with milliseconds ("2026-12-05T16:00:00.123Z").
std::string UtcTimestamp();

class RequestLog {
 public:
  // `out` is not owned; null disables the log. At most `max_queued_bytes`
  // wait to be written.
  RequestLog(std::FILE* out, bool log_content, size_t max_queued_bytes = size_t{1} << 20);

  bool log_content() const { return log_content_; }
  void Write(const RequestLogEntry& entry);
  // The line Write would print (no newline), for tests.
  std::string Format(const RequestLogEntry& entry) const;
  // Lines dropped because the output did not keep up.
  uint64_t dropped() const { return writer_.dropped(); }

 private:
  const bool log_content_;
  const bool enabled_;
  AsyncLineWriter writer_;
};

}  // namespace swiftlet::server
