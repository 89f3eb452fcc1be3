#include "kv/block_pool.h"

#include "core/check.h"

namespace swiftlet {

BlockPool::BlockPool(int32_t n_blocks)
    : n_blocks_(n_blocks),
      refcount_(static_cast<size_t>(n_blocks), 0),
      prev_(static_cast<size_t>(n_blocks), -1),
      next_(static_cast<size_t>(n_blocks), -1),
      in_lru_(static_cast<size_t>(n_blocks), 0) {
  SWIFTLET_CHECK(n_blocks >= 0);
  free_.reserve(static_cast<size_t>(n_blocks));
  for (int32_t b = n_blocks - 1; b >= 0; --b) free_.push_back(b);
}

int32_t BlockPool::refcount(int32_t block) const {
  SWIFTLET_CHECK(block >= 0 && block < n_blocks_);
  return refcount_[static_cast<size_t>(block)];
}

bool BlockPool::is_cached(int32_t block) const {
  SWIFTLET_CHECK(block >= 0 && block < n_blocks_);
  return in_lru_[static_cast<size_t>(block)] != 0;
}

int32_t BlockPool::Allocate(bool* evicted) {
  *evicted = false;
  int32_t block = -1;
  if (!free_.empty()) {
    block = free_.back();
    free_.pop_back();
  } else if (head_ >= 0) {
    block = head_;
    LruUnlink(block);
    *evicted = true;
  } else {
    return -1;
  }
  refcount_[static_cast<size_t>(block)] = 1;
  return block;
}

void BlockPool::Ref(int32_t block) {
  SWIFTLET_CHECK(block >= 0 && block < n_blocks_);
  int32_t& rc = refcount_[static_cast<size_t>(block)];
  if (rc == 0) {
    // Only a cached block may be revived; a free one holds nothing.
    SWIFTLET_CHECK(in_lru_[static_cast<size_t>(block)]);
    LruUnlink(block);
  }
  ++rc;
}

void BlockPool::Unref(int32_t block, bool keep_cached) {
  SWIFTLET_CHECK(block >= 0 && block < n_blocks_);
  int32_t& rc = refcount_[static_cast<size_t>(block)];
  SWIFTLET_CHECK(rc > 0);
  if (--rc > 0) return;
  if (keep_cached) {
    LruPushBack(block);
  } else {
    free_.push_back(block);
  }
}

void BlockPool::Uncache(int32_t block) {
  LruUnlink(block);
  free_.push_back(block);
}

std::vector<int32_t> BlockPool::CachedInLruOrder() const {
  std::vector<int32_t> out;
  for (int32_t b = head_; b >= 0; b = next_[static_cast<size_t>(b)]) out.push_back(b);
  return out;
}

void BlockPool::LruUnlink(int32_t block) {
  const size_t i = static_cast<size_t>(block);
  SWIFTLET_CHECK(in_lru_[i]);
  if (prev_[i] >= 0) {
    next_[static_cast<size_t>(prev_[i])] = next_[i];
  } else {
    head_ = next_[i];
  }
  if (next_[i] >= 0) {
    prev_[static_cast<size_t>(next_[i])] = prev_[i];
  } else {
    tail_ = prev_[i];
  }
  prev_[i] = next_[i] = -1;
  in_lru_[i] = 0;
  --lru_size_;
}

void BlockPool::LruPushBack(int32_t block) {
  const size_t i = static_cast<size_t>(block);
  SWIFTLET_CHECK(!in_lru_[i]);
  prev_[i] = tail_;
  next_[i] = -1;
  if (tail_ >= 0) {
    next_[static_cast<size_t>(tail_)] = block;
  } else {
    head_ = block;
  }
  tail_ = block;
  in_lru_[i] = 1;
  ++lru_size_;
}

}  // namespace swiftlet
