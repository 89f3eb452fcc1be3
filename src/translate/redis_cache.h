// The translation cache in a Redis server, shared by every swiftlet that
// points at it (`serve --translate-cache redis://HOST:PORT`). Entries are
// plain string keys under "swiftlet:tr:" with the cache's time to live
// (SET ... PX), so Redis expires them; Clear deletes that prefix (SCAN +
// UNLINK) and nothing else.
//
// Redis is spoken to by one thread of the cache's own (hiredis, blocking,
// with connect and command timeouts), so no caller ever waits on the
// network: Get and Put queue the operation and return; a full queue, a
// down server or a timeout answer Get with a miss (counted as an error)
// and drop the Put. A lost connection is retried at most once a second.
//
// Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "core/status.h"
#include "translate/translation_cache.h"

namespace swiftlet::translate {

struct RedisCacheOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 6379;
  int64_t ttl_ms = 3'600'000;
  std::chrono::milliseconds connect_timeout{200};
  std::chrono::milliseconds command_timeout{100};
  size_t max_queue = 4096;  // Operations waiting for the Redis thread.
};

// "redis://HOST:PORT" (PORT optional, 6379) -> options; InvalidArgument
// otherwise.
absl::StatusOr<RedisCacheOptions> ParseRedisUrl(std::string_view url);

class RedisCache final : public TranslationCache {
 public:
  // Connects lazily (the first operation), so a server started before Redis
  // works once Redis is up.
  explicit RedisCache(RedisCacheOptions options);
  // Answers what is queued with misses and joins the thread.
  ~RedisCache() override;

  void Get(const std::string& key, GetDone done) override;
  void Put(const std::string& key, std::string value) override;
  void Clear() override;
  CacheStats stats() const override;
  const char* name() const override { return "redis"; }

 private:
  struct Op {
    enum Kind { kGet, kPut, kClear } kind = kGet;
    std::string key;
    std::string value;
    GetDone done;
  };
  struct Connection;
  void Loop();
  bool Enqueue(Op op);
  void Run(Op& op);
  bool Connected();

  const RedisCacheOptions options_;
  std::unique_ptr<Connection> conn_;  // Redis thread only.
  std::chrono::steady_clock::time_point next_connect_{};  // Redis thread only.

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Op> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  CacheStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace swiftlet::translate
