#include "gateway/affinity.h"

namespace swiftlet::gateway {

void AffinityMap::Touch(Entry& entry) { lru_.splice(lru_.begin(), lru_, entry.lru); }

std::optional<std::string> AffinityMap::Find(std::string_view stream_id, int64_t now_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(std::string(stream_id));
  if (it == entries_.end()) return std::nullopt;
  if (now_ns - it->second.used_ns > ttl_ns_) {
    lru_.erase(it->second.lru);
    entries_.erase(it);
    return std::nullopt;
  }
  it->second.used_ns = now_ns;
  Touch(it->second);
  return it->second.site;
}

void AffinityMap::Pin(std::string_view stream_id, std::string site, int64_t now_ns) {
  if (stream_id.empty() || stream_id.size() > kMaxStreamIdBytes || max_entries_ == 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::string key(stream_id);
  if (auto it = entries_.find(key); it != entries_.end()) {
    it->second.site = std::move(site);
    it->second.used_ns = now_ns;
    Touch(it->second);
    return;
  }
  while (entries_.size() >= max_entries_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
  lru_.push_front(key);
  entries_.emplace(std::move(key), Entry{std::move(site), now_ns, lru_.begin()});
}

size_t AffinityMap::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

}  // namespace swiftlet::gateway
