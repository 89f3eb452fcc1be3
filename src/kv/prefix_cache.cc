#include "kv/prefix_cache.h"

#include <algorithm>
#include <vector>

#include "core/check.h"

namespace swiftlet {
namespace {

// wyhash's 64x64->128 multiply-and-fold: fast and well mixed. The hash only
// has to make collisions rare; Find detects the ones that happen.
uint64_t Mix(uint64_t a, uint64_t b) {
  const unsigned __int128 r =
      static_cast<unsigned __int128>(a ^ 0xa0761d6478bd642full) * (b ^ 0xe7037ed1a0b428dbull);
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

}  // namespace

uint64_t DefaultChainHash(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = Mix(parent, tokens.size());
  size_t i = 0;
  for (; i + 1 < tokens.size(); i += 2) {
    h = Mix(h ^ static_cast<uint32_t>(tokens[i]), 0x8ebc6af09c88c6e3ull ^
                                                     static_cast<uint32_t>(tokens[i + 1]));
  }
  if (i < tokens.size()) h = Mix(h ^ static_cast<uint32_t>(tokens[i]), 0x589965cc75374cc3ull);
  return h;
}

PrefixCache::PrefixCache(int64_t block_tokens, int32_t n_blocks)
    : block_tokens_(block_tokens),
      hash_(DefaultChainHash),
      entries_(static_cast<size_t>(n_blocks)),
      tokens_(static_cast<size_t>(n_blocks) * static_cast<size_t>(block_tokens)) {
  SWIFTLET_CHECK(block_tokens > 0 && n_blocks >= 0);
  map_.reserve(static_cast<size_t>(n_blocks));
  shared_->hashes.reserve(static_cast<size_t>(n_blocks));
}

void PrefixCache::SetHashFunction(ChainHashFn hash) {
  SWIFTLET_CHECK(map_.empty() && hash);
  hash_ = std::move(hash);
}

uint64_t PrefixCache::Hash(uint64_t parent_hash, std::span<const int32_t> tokens) const {
  SWIFTLET_CHECK(static_cast<int64_t>(tokens.size()) == block_tokens_);
  return hash_(parent_hash, tokens);
}

PrefixCache::Found PrefixCache::Find(uint64_t hash, uint64_t parent_hash, PrefixEntryRef parent,
                                     std::span<const int32_t> tokens) {
  SWIFTLET_CHECK(static_cast<int64_t>(tokens.size()) == block_tokens_);
  const auto it = map_.find(hash);
  if (it == map_.end()) return {};
  const int32_t block = it->second;
  const Entry& e = entries_[static_cast<size_t>(block)];
  if (!IsLive(e.parent)) return {Lookup::kStale, block};
  const int32_t* held = tokens_.data() + static_cast<size_t>(block) * block_tokens_;
  if (e.parent_hash != parent_hash || !(e.parent == parent) ||
      !std::equal(tokens.begin(), tokens.end(), held)) {
    ++stats_.collisions;
    return {Lookup::kCollision, -1};
  }
  return {Lookup::kFound, block};
}

void PrefixCache::Insert(uint64_t hash, uint64_t parent_hash, PrefixEntryRef parent,
                         std::span<const int32_t> tokens, int32_t block) {
  SWIFTLET_CHECK(static_cast<int64_t>(tokens.size()) == block_tokens_);
  SWIFTLET_CHECK(!IsRegistered(block));
  const bool inserted = map_.emplace(hash, block).second;
  SWIFTLET_CHECK(inserted);
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->hashes.insert(hash);
  }
  Entry& e = entries_[static_cast<size_t>(block)];
  e.registered = true;
  e.hash = hash;
  e.parent_hash = parent_hash;
  e.parent = parent;
  std::copy(tokens.begin(), tokens.end(),
            tokens_.begin() + static_cast<ptrdiff_t>(block * block_tokens_));
  ++stats_.inserts;
}

void PrefixCache::Evict(int32_t block) {
  Remove(block);
  ++stats_.evictions;
}

void PrefixCache::ForgetStale(int32_t block) {
  SWIFTLET_CHECK(IsRegistered(block) && !IsLive(entries_[static_cast<size_t>(block)].parent));
  Remove(block);
  ++stats_.stale_dropped;
}

void PrefixCache::Remove(int32_t block) {
  SWIFTLET_CHECK(IsRegistered(block));
  Entry& e = entries_[static_cast<size_t>(block)];
  map_.erase(e.hash);
  {
    std::lock_guard<std::mutex> lock(shared_->mu);
    shared_->hashes.erase(e.hash);
  }
  e.registered = false;
  ++e.generation;  // Children naming the old registration can no longer match.
}

bool PrefixCache::IsRegistered(int32_t block) const {
  SWIFTLET_CHECK(block >= 0 && block < static_cast<int32_t>(entries_.size()));
  return entries_[static_cast<size_t>(block)].registered;
}

PrefixEntryRef PrefixCache::RefOf(int32_t block) const {
  SWIFTLET_CHECK(IsRegistered(block));
  return {block, entries_[static_cast<size_t>(block)].generation};
}

bool PrefixCache::IsLive(PrefixEntryRef ref) const {
  if (ref.block < 0) return true;
  const Entry& e = entries_[static_cast<size_t>(ref.block)];
  return e.registered && e.generation == ref.generation;
}

void PrefixCache::RecordQuery(int64_t query_tokens, int64_t hit_tokens) {
  ++stats_.queries;
  stats_.query_tokens += static_cast<uint64_t>(query_tokens);
  if (hit_tokens > 0) ++stats_.hit_queries;
  stats_.hit_tokens += static_cast<uint64_t>(hit_tokens);
}

int64_t PrefixCache::LeadingCachedBlocks(uint64_t root_hash, std::span<const int32_t> tokens,
                                         int64_t max_blocks) const {
  const int64_t n = std::min<int64_t>(max_blocks, static_cast<int64_t>(tokens.size()) / block_tokens_);
  // Hashed outside the lock: only the lookups hold it.
  std::vector<uint64_t> chain;
  chain.reserve(static_cast<size_t>(std::max<int64_t>(0, n)));
  uint64_t hash = root_hash;
  for (int64_t i = 0; i < n; ++i) {
    hash = Hash(hash, tokens.subspan(static_cast<size_t>(i * block_tokens_), static_cast<size_t>(block_tokens_)));
    chain.push_back(hash);
  }
  std::lock_guard<std::mutex> lock(shared_->mu);
  int64_t held = 0;
  while (held < n && shared_->hashes.contains(chain[static_cast<size_t>(held)])) ++held;
  return held;
}

}  // namespace swiftlet
