// GET /probe/download?bytes=N: N bytes (1..1 GiB) of filler, streamed, for
// `swiftlet probe --download-mb`'s throughput test. No other route moves
// an arbitrary amount of data, and a throughput test needs one.
//
// The body is never held in memory: a pacer thread tops up each running
// download's send buffer to kHighWater (1 MiB) whenever it falls below
// kLowWater, every millisecond (the writer has no drain callback, so it is
// watched; 1 MiB a millisecond leaves the ceiling at ~8 Gb/s). At most
// max_downloads run at once (a link test needs one; more share the same
// link): past it, 429 with Retry-After. A client that leaves ends its
// download.
//
// Threads: Handle from any I/O thread; the destructor (from the owner's
// thread) stops the pacer and drops unfinished downloads, which closes
// their connections.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "http/message.h"
#include "http/response_writer.h"

namespace swiftlet::server {

class ProbeDownloads {
 public:
  static constexpr uint64_t kMaxBytes = uint64_t{1} << 30;

  explicit ProbeDownloads(size_t max_downloads = 4);
  ~ProbeDownloads();

  ProbeDownloads(const ProbeDownloads&) = delete;
  ProbeDownloads& operator=(const ProbeDownloads&) = delete;

  void Handle(const http::HttpRequest& request, std::shared_ptr<http::ResponseWriter> writer);

 private:
  struct Download {
    std::shared_ptr<http::ResponseWriter> writer;
    uint64_t left = 0;
  };
  void Run();

  const size_t max_downloads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Download> downloads_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread pacer_;
};

}  // namespace swiftlet::server
