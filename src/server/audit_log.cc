#include "server/audit_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "core/str_cat.h"
#include "http/crypto.h"
#include "server/request_log.h"

namespace swiftlet::server {
namespace {


int OpenAppend(const std::string& path) {
  return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

}  // namespace

absl::StatusOr<std::unique_ptr<AuditLog>> AuditLog::Open(AuditLogOptions options) {
  if (options.keep < 1 || options.keep > 100) return absl::InvalidArgumentError("audit log: keep 1..100 rotated files");
  if (options.max_bytes < 4096) return absl::InvalidArgumentError("audit log: rotate at 4KiB at least");
  const int fd = OpenAppend(options.path);
  if (fd < 0) {
    return absl::PermissionDeniedError(StrCat(options.path, ": cannot open the audit log: ", std::strerror(errno)));
  }
  struct stat st;
  const uint64_t size = ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(options), fd, size));
}

AuditLog::AuditLog(AuditLogOptions options, int fd, uint64_t size)
    : options_(std::move(options)), fd_(fd), size_(size) {
  thread_ = std::thread([this] { Loop(); });
}

AuditLog::~AuditLog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  if (fd_ >= 0) {
    ::fdatasync(fd_);
    ::close(fd_);
  }
}

std::string AuditLog::Format(const AuditRecord& r) const {
  nlohmann::json j = {{"time", UtcTimestamp()}, {"method", r.method}, {"endpoint", r.endpoint.substr(0, 256)},
                      {"status", r.status}, {"latency_ms", static_cast<double>(static_cast<int64_t>(r.latency_ms * 1000)) / 1000}};
  if (!r.key_id.empty()) j["key"] = r.key_id;
  if (!r.peer.empty()) j["peer"] = r.peer;
  if (!r.model.empty()) j["model"] = r.model;
  if (r.prompt_tokens >= 0) j["prompt_tokens"] = r.prompt_tokens;
  if (r.completion_tokens >= 0) j["completion_tokens"] = r.completion_tokens;
  // Digests prove what was sent and said without keeping it.
  if (!r.prompt.empty()) j["prompt_sha256"] = http::Sha256Hex(r.prompt);
  if (!r.output.empty()) j["output_sha256"] = http::Sha256Hex(r.output);
  if (options_.log_content) {
    j["prompt"] = r.prompt;
    j["output"] = r.output;
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool AuditLog::Write(const AuditRecord& record) {
  std::string line = Format(record) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_ || queued_bytes_ + line.size() > options_.max_queued_bytes) {
    ++dropped_;
    return false;
  }
  queued_bytes_ += line.size();
  queue_.push_back(std::move(line));
  wake_.notify_one();
  return true;
}

uint64_t AuditLog::dropped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

void AuditLog::Rotate() {
  ::fdatasync(fd_);
  ::close(fd_);
  const std::string& p = options_.path;
  std::remove(StrCat(p, ".", options_.keep).c_str());
  for (int i = options_.keep - 1; i >= 1; --i) {
    std::rename(StrCat(p, ".", i).c_str(), StrCat(p, ".", i + 1).c_str());
  }
  std::rename(p.c_str(), StrCat(p, ".1").c_str());
  fd_ = OpenAppend(p);
  size_ = 0;
}

void AuditLog::Loop() {
  auto last_sync = std::chrono::steady_clock::now();
  bool unsynced = false;
  for (;;) {
    std::deque<std::string> batch;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, options_.sync_interval, [this] { return stop_ || !queue_.empty(); });
      batch.swap(queue_);
      queued_bytes_ = 0;
      stop = stop_;
    }
    for (const std::string& line : batch) {
      if (fd_ < 0) {
        std::lock_guard<std::mutex> lock(mu_);
        ++dropped_;
        continue;
      }
      if (size_ > 0 && size_ + line.size() > options_.max_bytes) Rotate();
      size_t done = 0;
      while (done < line.size() && fd_ >= 0) {
        const ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
      if (done < line.size()) {
        std::lock_guard<std::mutex> lock(mu_);
        ++dropped_;
      }
      size_ += done;
      unsynced = unsynced || done > 0;
    }
    const auto now = std::chrono::steady_clock::now();
    if (unsynced && fd_ >= 0 && (stop || now - last_sync >= options_.sync_interval)) {
      ::fdatasync(fd_);
      unsynced = false;
      last_sync = now;
    }
    if (stop) return;
  }
}

}  // namespace swiftlet::server
