// The block allocator of the paged KV cache: reference counts, a free list
// and an LRU of cached blocks that no sequence references (their rows are
// kept for the prefix cache until the space is needed).
//
// A block is in exactly one of three states: free (on the free list), in use
// (refcount > 0), or cached (refcount 0, on the LRU). The pool knows nothing
// of what a block holds; the caller says, when the last reference goes,
// whether the block is worth keeping (PagedKvCache: it is registered in the
// prefix cache). Nothing allocates after construction.
// Not thread-safe: owned and used by the engine thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace swiftlet {

class BlockPool {
 public:
  // Blocks 0..n_blocks-1, all free; Allocate() hands them out in id order.
  explicit BlockPool(int32_t n_blocks);

  int32_t total() const { return n_blocks_; }
  int32_t free() const { return static_cast<int32_t>(free_.size()); }
  int32_t cached() const { return lru_size_; }
  int32_t in_use() const { return n_blocks_ - free() - cached(); }
  // Blocks Allocate() can still hand out: free, then evicted from the LRU.
  int32_t available() const { return free() + cached(); }

  int32_t refcount(int32_t block) const;
  bool is_cached(int32_t block) const;

  // A block with refcount 1: from the free list, or else the least recently
  // used cached block (*evicted set true so the caller forgets its
  // contents). -1 when no block is free or cached.
  int32_t Allocate(bool* evicted);

  // One more reference. A cached block (refcount 0) leaves the LRU.
  void Ref(int32_t block);

  // One reference less. At zero the block becomes the most recently used
  // cached block when `keep_cached`, or goes back to the free list.
  void Unref(int32_t block, bool keep_cached);

  // Moves a cached block to the free list (its contents are no longer
  // wanted).
  void Uncache(int32_t block);

  // Cached blocks from least to most recently used (for tests and metrics;
  // allocates).
  std::vector<int32_t> CachedInLruOrder() const;

 private:
  void LruUnlink(int32_t block);
  void LruPushBack(int32_t block);

  int32_t n_blocks_;
  std::vector<int32_t> refcount_;
  std::vector<int32_t> free_;  // A stack; the back is handed out next.
  // The LRU, an intrusive doubly linked list over block ids (-1 ends it):
  // head_ is the least recently used.
  std::vector<int32_t> prev_, next_;
  std::vector<uint8_t> in_lru_;
  int32_t head_ = -1, tail_ = -1, lru_size_ = 0;
};

}  // namespace swiftlet
