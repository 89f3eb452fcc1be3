// Stream affinity: which site a live stream (a `stream_id`) was sent to, so
// its next request or reconnect goes there again while that site is fit
// (gateway/site_choice.h KeepsAffinity). Bounded: at most `max_entries`
// streams, the least recently used forgotten first, and an entry unused
// for `ttl_ns` is gone.
//
// Thread-safe (one mutex; every call is O(1) amortised).
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "absl/base/thread_annotations.h"

namespace swiftlet::gateway {

inline constexpr size_t kMaxStreamIdBytes = 256;

class AffinityMap {
 public:
  AffinityMap(size_t max_entries, int64_t ttl_ns) : max_entries_(max_entries), ttl_ns_(ttl_ns) {}

  // The site a stream is pinned to, if known and fresh (refreshes it).
  std::optional<std::string> Find(std::string_view stream_id, int64_t now_ns);
  // Pins (or re-pins) a stream. Ids longer than kMaxStreamIdBytes are not
  // kept (a client cannot grow the map with huge keys).
  void Pin(std::string_view stream_id, std::string site, int64_t now_ns);

  size_t size() const;

 private:
  struct Entry {
    std::string site;
    int64_t used_ns = 0;
    std::list<std::string>::iterator lru;
  };
  void Touch(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const size_t max_entries_;
  const int64_t ttl_ns_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // Front: most recent.
};

}  // namespace swiftlet::gateway
