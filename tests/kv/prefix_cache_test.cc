#include "kv/prefix_cache.h"

#include <gtest/gtest.h>

#include <vector>

namespace swiftlet {
namespace {

using Lookup = PrefixCache::Lookup;

TEST(PrefixCacheTest, ChainHashDependsOnParentAndEveryToken) {
  const std::vector<int32_t> a = {1, 2, 3, 4};
  const std::vector<int32_t> b = {1, 2, 3, 5};
  const std::vector<int32_t> c = {2, 1, 3, 4};
  EXPECT_EQ(DefaultChainHash(7, a), DefaultChainHash(7, a));
  EXPECT_NE(DefaultChainHash(7, a), DefaultChainHash(8, a));
  EXPECT_NE(DefaultChainHash(7, a), DefaultChainHash(7, b));
  EXPECT_NE(DefaultChainHash(7, a), DefaultChainHash(7, c));
}

TEST(PrefixCacheTest, FindComparesTokensParentHashAndParentEntry) {
  PrefixCache index(4, 8);
  index.SetHashFunction([](uint64_t, std::span<const int32_t>) { return uint64_t{5}; });
  const std::vector<int32_t> t = {1, 2, 3, 4};
  const std::vector<int32_t> u = {1, 2, 3, 9};
  const uint64_t h = index.Hash(PrefixCache::kRootHash, t);
  EXPECT_EQ(index.Find(h, PrefixCache::kRootHash, {}, t).lookup, Lookup::kAbsent);
  index.Insert(h, PrefixCache::kRootHash, {}, t, 3);
  EXPECT_TRUE(index.IsRegistered(3));
  const PrefixCache::Found hit = index.Find(h, PrefixCache::kRootHash, {}, t);
  EXPECT_EQ(hit.lookup, Lookup::kFound);
  EXPECT_EQ(hit.block, 3);
  // Same hash, other tokens / other parent hash / other parent entry.
  EXPECT_EQ(index.Find(h, PrefixCache::kRootHash, {}, u).lookup, Lookup::kCollision);
  EXPECT_EQ(index.Find(h, 99, {}, t).lookup, Lookup::kCollision);
  EXPECT_EQ(index.Find(h, PrefixCache::kRootHash, PrefixEntryRef{1, 0}, t).lookup,
            Lookup::kCollision);
  EXPECT_EQ(index.stats().collisions, 3u);

  const PrefixEntryRef ref = index.RefOf(3);
  EXPECT_TRUE(index.IsLive(ref));
  index.Evict(3);
  EXPECT_FALSE(index.IsRegistered(3));
  EXPECT_FALSE(index.IsLive(ref));
  EXPECT_EQ(index.Find(h, PrefixCache::kRootHash, {}, t).lookup, Lookup::kAbsent);
  // Registered again, the block is a new entry: the old reference stays dead.
  index.Insert(h, PrefixCache::kRootHash, {}, u, 3);
  EXPECT_FALSE(index.IsLive(ref));
  EXPECT_TRUE(index.IsLive(index.RefOf(3)));
  EXPECT_TRUE(index.IsLive(PrefixEntryRef{}));  // The root.
  EXPECT_EQ(index.stats().evictions, 1u);
  EXPECT_EQ(index.stats().inserts, 2u);
}

}  // namespace
}  // namespace swiftlet
