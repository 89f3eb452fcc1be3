// The paged KV cache: keys and values of every layer in fixed-size blocks of
// block_tokens positions, shared between sequences by reference count, with
// a prefix cache of full blocks (prefix_cache.h) so a request that starts
// with a cached prefix reuses its blocks instead of recomputing them.
//
// Memory: one allocation at Create, n_blocks blocks; block b holds, for
// each layer, block_tokens K rows then block_tokens V rows of kv_dim values
// in the cache's type (F16, F32 or Q8_0). Nothing allocates per token; Reserve may
// grow a sequence's block table.
//
// A sequence (id 0..max_sequences-1, the id a Batch's slots carry) is a
// block table and a length:
// positions [0, length) are reserved, position j lives in row j % block_tokens
// of its table's block j / block_tokens, and the same block id serves every
// layer. A block is shared after Fork or MatchPrefix; a shared block and a
// block in the prefix cache are immutable (CheckWritable refuses them), so
// Reserve copies a shared partial last block before a sequence writes on.
// When no block is free, allocation evicts the least recently used cached
// block that no sequence references.
//
// BlockTable(seq) is the sequence's table itself, valid until it next
// changes (Reserve, MatchPrefix, Free); Layer(l) says where layer l's rows
// sit in each block. The backend writes rows there (StoreKv) after the
// caller has checked them with CheckWritable; MarkStored then counts a
// position as written for the prefix cache. Neither allocates; a bad call
// is a bug and aborts.
//
// Not thread-safe: owned and used by the engine thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "kv/block_pool.h"
#include "kv/kv_store.h"
#include "kv/prefix_cache.h"

namespace swiftlet {

class Backend;       // kernels/backend.h
class DeviceBuffer;  // kernels/backend.h

struct PagedKvShape {
  int64_t n_layer = 0;
  int64_t kv_dim = 0;          // n_head_kv * head_dim
  int64_t block_tokens = 16;   // Positions per block.
  int64_t n_blocks = 0;
  TensorType type = TensorType::kF16;  // F16, F32 or Q8_0 (kv/kv_row.h).
  int32_t max_sequences = 256;
};

class PagedKvCache final : public KvStore {
 public:
  // Bytes of one block (all layers, K and V); 0 when the shape's sizes are
  // not positive, the type unsupported, or the size overflows.
  static uint64_t BlockBytes(const PagedKvShape& shape);
  // How many blocks of `shape` fit in `bytes` (shape.n_blocks is ignored).
  static int64_t BlocksForBytes(const PagedKvShape& shape, uint64_t bytes);

  // Allocates every block up front, in `device`'s memory (host memory when
  // null: the CPU backend's). InvalidArgument for a bad shape or an
  // unsupported type; ResourceExhausted, naming the bytes, when the cache
  // is over `max_bytes` or the allocation fails.
  static absl::StatusOr<PagedKvCache> Create(const PagedKvShape& shape, uint64_t max_bytes,
                                             Backend* device = nullptr);

  // With scrub on, zeroes every block before the memory goes back (a
  // model's unload).
  ~PagedKvCache();
  PagedKvCache(PagedKvCache&&) noexcept;
  PagedKvCache& operator=(PagedKvCache&&) noexcept;

  const PagedKvShape& shape() const { return shape_; }

  // --- Sequences ---------------------------------------------------------

  // A new empty sequence; ResourceExhausted when max_sequences exist.
  // `scope` partitions the prefix cache: a sequence matches and registers
  // blocks only within its scope (0: the global one), so one tenant's
  // cached prompts are never reused, nor timed, by another. Forks keep it.
  absl::StatusOr<int32_t> CreateSequence(uint64_t scope = 0);
  // A new sequence sharing all of `seq`'s blocks and its length (for n > 1
  // choices). Fork after the reserved positions are written: positions
  // already reserved in a shared block cannot be written by either.
  absl::StatusOr<int32_t> Fork(int32_t seq);
  // Makes positions [length, new_length) writable: allocates blocks, and
  // copies a shared partial last block (all layers) into a block of the
  // sequence's own. All or nothing: on ResourceExhausted nothing changed.
  // A new_length at or below the length changes nothing.
  absl::Status Reserve(int32_t seq, int64_t new_length);
  // Releases the sequence's references. Its blocks registered in the prefix
  // cache stay cached (the last block first in line for eviction); the
  // others are free again. The id may be handed out again.
  absl::Status Free(int32_t seq);

  bool Exists(int32_t seq) const;
  int64_t length(int32_t seq) const;            // The sequence must exist.
  std::span<const int32_t> blocks(int32_t seq) const;  // Its block table.
  int32_t sequences() const { return live_sequences_; }

  // Blocks Reserve(seq, length(seq) + n_more) would take (new blocks plus a
  // copy-on-write), for admission; compare with blocks_available().
  int64_t BlocksNeeded(int32_t seq, int64_t n_more) const;

  // --- Prefix cache ------------------------------------------------------

  // Attaches to `seq` (existing, empty) the longest run of cached full
  // blocks holding tokens[0..k) for k <= max_tokens (callers pass
  // tokens.size() - 1 so one token is left to compute logits from), and
  // sets its length to k, which it returns (a multiple of block_tokens).
  absl::StatusOr<int64_t> MatchPrefix(int32_t seq, std::span<const int32_t> tokens,
                                      int64_t max_tokens);
  // Registers `seq`'s full blocks whose positions are all written (a
  // position counts once MarkStored says every layer of it is stored),
  // given the sequence's tokens (tokens[j] at position j; those past the
  // written positions are ignored), unless the same content is registered already (the sequence
  // keeps its own block). Call again as the sequence grows with the same
  // tokens and more; only new blocks are hashed. After a hash collision
  // the sequence registers no more.
  absl::Status Commit(int32_t seq, std::span<const int32_t> tokens);
  // Thread-safe, unlike the rest: the leading tokens of `tokens` (at most
  // max_tokens, whole blocks) that MatchPrefix would likely attach now for a
  // sequence of `scope`, judged by hash alone. For admission's estimate on
  // a caller's thread; the cache must outlive the call.
  int64_t CachedPrefixTokens(uint64_t scope, std::span<const int32_t> tokens, int64_t max_tokens) const;
  const PrefixCacheStats& prefix_stats() const { return prefix_.stats(); }
  // Forgets every registered block: unreferenced ones go back to the free
  // list, referenced ones stay with their sequences (which may register
  // them again as they grow). Returns the blocks freed.
  int64_t ClearPrefixCache();
  // Scrubbing: a block's rows are zeroed whenever it goes back to the free
  // list or is taken from the prefix cache for other content, so freed
  // prompt data does not linger in memory.
  void set_scrub(bool scrub) { scrub_ = scrub; }
  // Replaces the chain hash (tests make collisions); before any Commit.
  void SetChainHashForTesting(ChainHashFn hash) { prefix_.SetHashFunction(std::move(hash)); }

  // --- Blocks ------------------------------------------------------------

  int64_t blocks_total() const { return pool_.total(); }
  int64_t blocks_free() const { return pool_.free(); }
  int64_t blocks_in_use() const { return pool_.in_use(); }
  int64_t blocks_cached() const { return pool_.cached(); }  // Cached, unreferenced.
  int64_t blocks_available() const { return pool_.available(); }  // free + cached
  int32_t refcount(int32_t block) const { return pool_.refcount(block); }
  bool IsCached(int32_t block) const { return prefix_.IsRegistered(block); }
  // Unreferenced cached blocks, next to be evicted first.
  std::vector<int32_t> EvictionOrder() const { return pool_.CachedInLruOrder(); }
  uint64_t block_bytes() const { return block_bytes_; }
  uint64_t bytes() const { return block_bytes_ * static_cast<uint64_t>(shape_.n_blocks); }

  // --- KvStore -----------------------------------------------------------

  // OK when `seq` exists, pos < its length, and the block holding pos is
  // neither shared nor in the prefix cache.
  absl::Status CheckWritable(int32_t seq, int64_t pos) const override;
  KvLayer Layer(int64_t layer) const override;
  std::span<const int32_t> BlockTable(int32_t seq) const override;
  void MarkStored(int32_t seq, int64_t pos) override;
  TensorType type() const override { return shape_.type; }

 private:
  struct Sequence {
    bool live = false;
    int64_t length = 0;
    int64_t written = 0;  // Leading positions MarkStored has counted.
    std::vector<int32_t> blocks;
    // Prefix-cache state of the leading blocks Commit has hashed.
    int64_t hashed_blocks = 0;
    uint64_t root_hash = PrefixCache::kRootHash;  // The scope's empty prefix.
    uint64_t chain_hash = PrefixCache::kRootHash;
    PrefixEntryRef chain_ref;  // The entry standing for those blocks.
    bool chain_broken = false;  // After a hash collision: register no more.
  };

  PagedKvCache(const PagedKvShape& shape, uint64_t block_bytes, std::unique_ptr<DeviceBuffer> memory);
  const Sequence& Seq(int32_t seq) const;
  absl::Status CheckExists(int32_t seq) const;
  // Offset in memory_ of block `block`'s rows of `layer`, K or V.
  size_t RowsOffset(int32_t block, int64_t layer, bool value) const;
  int32_t AllocateBlock();
  void DropStale(int32_t block);
  int32_t NewSequenceId();

  PagedKvShape shape_;
  uint64_t block_bytes_ = 0;
  bool scrub_ = false;
  void Scrub(int32_t block);
  // Unref, scrubbing a block that went back to the free list.
  void Release(int32_t block);
  size_t row_bytes_ = 0;
  // The blocks, in the memory of the backend that computes with them.
  std::unique_ptr<DeviceBuffer> memory_;
  BlockPool pool_;
  PrefixCache prefix_;
  std::vector<Sequence> seqs_;
  std::vector<int32_t> free_ids_;
  int32_t live_sequences_ = 0;
};

}  // namespace swiftlet
