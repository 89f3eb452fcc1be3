// The translation cache: finished translations by exact key (normalised
// text, source, target, glossary, model, tenant scope), with a time to live.
// The in-process LRU bounded by bytes is the default; a Redis server
// (translate/redis_cache.h) shares one cache between servers.
//
// Lookups may complete later on another thread (Redis), so Get takes a
// callback; the in-process cache calls it at once. A failing backend is a
// miss, never an error to the client. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/clock.h"

namespace swiftlet::translate {

struct CacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t evictions = 0;  // Entries pushed out by the byte bound (not expiry).
  uint64_t errors = 0;     // Backend failures (counted as misses too).
  uint64_t entries = 0;
  uint64_t bytes = 0;
};

class TranslationCache {
 public:
  using GetDone = std::function<void(std::optional<std::string> value)>;
  virtual ~TranslationCache() = default;
  // `done` runs exactly once, possibly on another thread, possibly before
  // Get returns; it must be quick.
  virtual void Get(const std::string& key, GetDone done) = 0;
  virtual void Put(const std::string& key, std::string value) = 0;
  virtual void Clear() = 0;
  virtual CacheStats stats() const = 0;
  virtual const char* name() const = 0;  // "memory", "redis"
};

// The key's parts. The text is normalised (Unicode NFC, whitespace runs
// collapsed, trimmed), so comments that differ only in spacing share an
// entry; the glossary enters as a digest of its canonical form.
struct CacheKeyParts {
  std::string_view text;
  std::string_view source;  // "" for detected.
  std::string_view target;
  std::string_view model;
  std::string_view scope;   // Tenant (API key id); "" for the global scope.
  const std::vector<std::string>* keep = nullptr;
  const std::vector<std::pair<std::string, std::string>>* map = nullptr;
};
std::string CacheKey(const CacheKeyParts& parts);
// NFC, whitespace collapsed and trimmed (invalid UTF-8 is kept as is).
std::string NormalizeText(std::string_view text);

class MemoryCache final : public TranslationCache {
 public:
  // `clock` (null: the system clock) must outlive the cache.
  MemoryCache(uint64_t max_bytes, int64_t ttl_ns, const Clock* clock = nullptr);
  void Get(const std::string& key, GetDone done) override;
  void Put(const std::string& key, std::string value) override;
  void Clear() override;
  CacheStats stats() const override;
  const char* name() const override { return "memory"; }

 private:
  struct Entry {
    std::string key;
    std::string value;
    int64_t expires_ns = 0;
  };
  static uint64_t Cost(const Entry& e) { return e.key.size() + e.value.size() + 64; }
  void Erase(std::list<Entry>::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t max_bytes_;
  const int64_t ttl_ns_;
  const Clock& clock_;
  mutable std::mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // Most recent first.
  std::unordered_map<std::string, std::list<Entry>::iterator> index_ ABSL_GUARDED_BY(mu_);
  CacheStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace swiftlet::translate
