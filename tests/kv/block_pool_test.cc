#include "kv/block_pool.h"

#include <gtest/gtest.h>

#include <vector>

namespace swiftlet {
namespace {

TEST(BlockPoolTest, HandsOutFreeBlocksInOrderThenEvictsLeastRecentlyCached) {
  BlockPool pool(4);
  EXPECT_EQ(pool.free(), 4);
  bool evicted = true;
  std::vector<int32_t> got;
  for (int i = 0; i < 4; ++i) {
    got.push_back(pool.Allocate(&evicted));
    EXPECT_FALSE(evicted);
  }
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2, 3}));
  EXPECT_EQ(pool.in_use(), 4);
  EXPECT_EQ(pool.Allocate(&evicted), -1);

  pool.Unref(2, /*keep_cached=*/true);
  pool.Unref(0, true);
  pool.Unref(3, false);
  EXPECT_EQ(pool.free(), 1);
  EXPECT_EQ(pool.cached(), 2);
  EXPECT_EQ(pool.in_use(), 1);
  EXPECT_EQ(pool.available(), 3);
  EXPECT_EQ(pool.CachedInLruOrder(), (std::vector<int32_t>{2, 0}));

  // A cached block revived by a reference leaves the LRU; released again it
  // is the most recent.
  pool.Ref(2);
  EXPECT_EQ(pool.refcount(2), 1);
  EXPECT_FALSE(pool.is_cached(2));
  pool.Unref(2, true);
  EXPECT_EQ(pool.CachedInLruOrder(), (std::vector<int32_t>{0, 2}));

  EXPECT_EQ(pool.Allocate(&evicted), 3);  // The free list first.
  EXPECT_FALSE(evicted);
  EXPECT_EQ(pool.Allocate(&evicted), 0);  // Then the least recently cached.
  EXPECT_TRUE(evicted);
  EXPECT_EQ(pool.Allocate(&evicted), 2);
  EXPECT_TRUE(evicted);
  EXPECT_EQ(pool.Allocate(&evicted), -1);
  EXPECT_EQ(pool.in_use(), 4);
}

TEST(BlockPoolTest, SharedBlockReturnsOnlyWithItsLastReference) {
  BlockPool pool(2);
  bool evicted;
  const int32_t b = pool.Allocate(&evicted);
  pool.Ref(b);
  pool.Ref(b);
  EXPECT_EQ(pool.refcount(b), 3);
  pool.Unref(b, false);
  pool.Unref(b, false);
  EXPECT_EQ(pool.free(), 1);
  pool.Unref(b, false);
  EXPECT_EQ(pool.free(), 2);
  EXPECT_EQ(pool.in_use(), 0);
}

}  // namespace
}  // namespace swiftlet
