// The prefix cache's index: full KV blocks, content-addressed by a chain
// hash of their tokens, h_i = hash(h_{i-1}, the block's block_tokens ids),
// so a block is found only after the whole prefix before it.
//
// Each entry keeps its block's tokens, its parent's hash and the identity of
// its parent entry, and Find compares all three: a hash collision is a
// miss, never a wrong block. Parents are named by (block, generation) — a
// block's generation changes whenever it leaves the index — so an entry
// whose parent was evicted and whose hash is later reused by other content
// is never reached through it. Such an entry (stale: its parent is gone) can
// never be reached again; Find reports it so the owner drops it and the
// hash is free for the same content computed anew.
//
// The index holds no references: PagedKvCache owns the blocks (BlockPool),
// decides what to register, and erases an entry when it evicts its block.
// Memory is fixed at construction (tokens of every block, one map entry per
// block at most). Not thread-safe: owned and used by the engine thread,
// except LeadingCachedBlocks, which admission calls from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"

namespace swiftlet {

// One registration of a block in the index. The root (block -1) stands for
// the empty prefix and is always live.
struct PrefixEntryRef {
  int32_t block = -1;
  uint64_t generation = 0;
  bool operator==(const PrefixEntryRef&) const = default;
};

// hash(parent hash, one block's tokens). Any function will do for
// correctness (collisions are detected); a good one makes them rare.
using ChainHashFn = std::function<uint64_t(uint64_t parent, std::span<const int32_t> tokens)>;
uint64_t DefaultChainHash(uint64_t parent, std::span<const int32_t> tokens);

struct PrefixCacheStats {
  uint64_t queries = 0;        // MatchPrefix calls.
  uint64_t query_tokens = 0;   // Tokens they could have matched (whole blocks).
  uint64_t hit_queries = 0;    // Calls that matched at least one block.
  uint64_t hit_tokens = 0;     // Tokens matched.
  uint64_t inserts = 0;        // Blocks registered.
  uint64_t evictions = 0;      // Registered blocks dropped to reuse their space.
  uint64_t collisions = 0;     // Lookups that found other content under the hash.
  uint64_t stale_dropped = 0;  // Entries dropped because their parent was gone.
};

class PrefixCache {
 public:
  static constexpr uint64_t kRootHash = 0x736c6574636b7631ull;  // h_{-1}
  enum class Lookup { kAbsent, kFound, kCollision, kStale };
  struct Found {
    Lookup lookup = Lookup::kAbsent;
    int32_t block = -1;  // When kFound or kStale.
  };

  PrefixCache(int64_t block_tokens, int32_t n_blocks);

  // Replaces the hash function; only while the index is empty (tests inject
  // colliding ones).
  void SetHashFunction(ChainHashFn hash);
  uint64_t Hash(uint64_t parent_hash, std::span<const int32_t> tokens) const;

  // The block registered under `hash` if it holds `tokens` (block_tokens of
  // them) after the prefix whose hash is `parent_hash` and whose entry is
  // `parent` (live); kStale when the hash holds an entry whose own parent is
  // gone (the caller drops it with Forget and may then insert); kCollision
  // (counted) when it holds other content.
  Found Find(uint64_t hash, uint64_t parent_hash, PrefixEntryRef parent,
             std::span<const int32_t> tokens);

  // Registers `block` (not registered) under `hash` (absent).
  void Insert(uint64_t hash, uint64_t parent_hash, PrefixEntryRef parent,
              std::span<const int32_t> tokens, int32_t block);

  // Drops a registered block (its space is being reused); counts an eviction.
  void Evict(int32_t block);
  // Drops the stale entry of a registered block; counted as such.
  void ForgetStale(int32_t block);

  bool IsRegistered(int32_t block) const;
  // The current registration of a registered block.
  PrefixEntryRef RefOf(int32_t block) const;
  // True for the root and for a registration that is still in the index.
  bool IsLive(PrefixEntryRef ref) const;
  int64_t size() const { return static_cast<int64_t>(map_.size()); }
  // Thread-safe: how many of the leading full blocks of `tokens` (at most
  // max_blocks) the index holds now under the chain from `root_hash`, by
  // hash alone (no content check, so a collision can count as held). An
  // estimate for admission, made without the engine thread; MatchPrefix is
  // what attaches blocks.
  int64_t LeadingCachedBlocks(uint64_t root_hash, std::span<const int32_t> tokens,
                              int64_t max_blocks) const;

  const PrefixCacheStats& stats() const { return stats_; }
  void RecordQuery(int64_t query_tokens, int64_t hit_tokens);

 private:
  struct Entry {
    bool registered = false;
    uint64_t generation = 0;
    uint64_t hash = 0;
    uint64_t parent_hash = 0;
    PrefixEntryRef parent;
  };

  void Remove(int32_t block);

  int64_t block_tokens_;
  ChainHashFn hash_;
  std::vector<Entry> entries_;     // By block id.
  std::vector<int32_t> tokens_;    // By block id, block_tokens_ each.
  absl::flat_hash_map<uint64_t, int32_t> map_;  // Chain hash -> block.
  // The hashes of map_, for readers on other threads (LeadingCachedBlocks);
  // behind a pointer so the index stays movable.
  struct SharedHashes {
    mutable std::mutex mu;
    absl::flat_hash_set<uint64_t> hashes;
  };
  std::unique_ptr<SharedHashes> shared_ = std::make_unique<SharedHashes>();
  PrefixCacheStats stats_;
};

}  // namespace swiftlet
