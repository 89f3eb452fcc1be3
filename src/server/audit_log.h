// The audit log (`serve --audit-log FILE`): one JSON line per request —
// time, API key id, peer address, endpoint, model, status, token counts,
// latency, and SHA-256 digests of the prompt and of the output — so an
// operator can prove who called and what was done without keeping what was
// said. Content itself only with --log-content.
//
// Lines are written by a thread of the log's own (Write only queues; a full
// queue drops the line and counts it), so no request thread waits on the
// disk. Files rotate by size: past max_bytes the file becomes FILE.1 (FILE.1
// becomes FILE.2, ..., the oldest beyond `keep` is deleted) and a new FILE
// starts. fsync policy: the data is flushed to disk (fdatasync) at most once
// per `sync_interval` while lines arrive, at every rotation and when the log
// closes; a crash loses at most that interval.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/status.h"

namespace swiftlet::server {

struct AuditRecord {
  std::string key_id;       // Empty: no keys configured.
  std::string peer;         // "ip:port"
  std::string method;
  std::string endpoint;
  std::string model;
  int status = 0;
  int64_t prompt_tokens = -1;  // -1: not a generation.
  int64_t completion_tokens = -1;
  double latency_ms = 0;
  std::string prompt;       // Digested; written only with log_content.
  std::string output;
};

struct AuditLogOptions {
  std::string path;
  uint64_t max_bytes = uint64_t{100} << 20;
  int keep = 5;  // Rotated files kept, 1..100.
  bool log_content = false;
  std::chrono::milliseconds sync_interval{1000};
  size_t max_queued_bytes = size_t{4} << 20;
};

class AuditLog {
 public:
  // Opens (appends to) the file; its directory must exist.
  static absl::StatusOr<std::unique_ptr<AuditLog>> Open(AuditLogOptions options);
  // Writes what is queued, syncs, closes.
  ~AuditLog();

  // Formats (digests included) and queues; false when dropped.
  bool Write(const AuditRecord& record);
  // The line Write would queue (no newline), for tests.
  std::string Format(const AuditRecord& record) const;
  uint64_t dropped() const;

 private:
  AuditLog(AuditLogOptions options, int fd, uint64_t size);
  void Loop();
  void Rotate();

  const AuditLogOptions options_;
  int fd_;          // Writer thread only (after construction).
  uint64_t size_;   // Writer thread only.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::string> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace swiftlet::server
