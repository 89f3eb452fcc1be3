#include "translate/translation_cache.h"

#include <utf8proc.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "core/str_cat.h"

namespace swiftlet::translate {
namespace {

// FNV-1a, 64 bits: a stable digest (the key must mean the same in every
// process sharing a Redis cache); collisions only cost a wrong hit between
// glossaries, and the rest of the key still has to match.
uint64_t Fnv1a(std::string_view s, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string GlossaryDigest(const std::vector<std::string>* keep,
                           const std::vector<std::pair<std::string, std::string>>* map) {
  std::vector<std::string> k = keep ? *keep : std::vector<std::string>{};
  std::vector<std::pair<std::string, std::string>> m = map ? *map : std::vector<std::pair<std::string, std::string>>{};
  if (k.empty() && m.empty()) return "-";
  std::sort(k.begin(), k.end());
  std::sort(m.begin(), m.end());
  uint64_t h = Fnv1a("glossary");
  for (const std::string& s : k) h = Fnv1a(StrCat(s.size(), ":", s), h);
  h = Fnv1a("|", h);
  for (const auto& [a, b] : m) h = Fnv1a(StrCat(a.size(), ":", a, b.size(), ":", b), h);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

std::string NormalizeText(std::string_view text) {
  std::string nfc(text);
  if (utf8proc_uint8_t* n = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(nfc.c_str()))) {
    nfc.assign(reinterpret_cast<const char*>(n));
    std::free(n);
  }
  std::string out;
  bool space = false;
  for (char c : nfc) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string CacheKey(const CacheKeyParts& p) {
  // Length-prefixed parts: no separator can be forged by the text.
  return StrCat("v1|", p.model.size(), ":", p.model, "|", p.scope.size(), ":", p.scope, "|", p.source, "|",
                p.target, "|", GlossaryDigest(p.keep, p.map), "|", NormalizeText(p.text));
}

MemoryCache::MemoryCache(uint64_t max_bytes, int64_t ttl_ns, const Clock* clock)
    : max_bytes_(max_bytes), ttl_ns_(ttl_ns), clock_(clock ? *clock : SystemClock()) {}

void MemoryCache::Erase(std::list<Entry>::iterator it) {
  stats_.bytes -= Cost(*it);
  stats_.entries -= 1;
  index_.erase(it->key);
  lru_.erase(it);
}

void MemoryCache::Get(const std::string& key, GetDone done) {
  std::optional<std::string> value;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = index_.find(key);
    if (it != index_.end() && it->second->expires_ns <= clock_.NowNs()) {
      Erase(it->second);
      it = index_.end();
    }
    if (it == index_.end()) {
      stats_.misses += 1;
    } else {
      stats_.hits += 1;
      lru_.splice(lru_.begin(), lru_, it->second);
      value = it->second->value;
    }
  }
  done(std::move(value));
}

void MemoryCache::Put(const std::string& key, std::string value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) Erase(it->second);
  Entry e{key, std::move(value), clock_.NowNs() + ttl_ns_};
  const uint64_t cost = Cost(e);
  if (cost > max_bytes_) return;  // Would push out everything else.
  while (!lru_.empty() && stats_.bytes + cost > max_bytes_) {
    Erase(std::prev(lru_.end()));
    stats_.evictions += 1;
  }
  lru_.push_front(std::move(e));
  index_[key] = lru_.begin();
  stats_.bytes += cost;
  stats_.entries += 1;
}

void MemoryCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  lru_.clear();
  index_.clear();
  stats_.bytes = 0;
  stats_.entries = 0;
}

CacheStats MemoryCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace swiftlet::translate
