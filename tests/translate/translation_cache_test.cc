#include "translate/translation_cache.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

namespace swiftlet::translate {
namespace {

std::optional<std::string> Get(TranslationCache& c, const std::string& key) {
  std::optional<std::string> out;
  bool called = false;
  c.Get(key, [&](std::optional<std::string> v) {
    out = std::move(v);
    called = true;
  });
  EXPECT_TRUE(called);
  return out;
}

TEST(TranslationCacheTest, KeysNormaliseTextAndSeparateEverythingElse) {
  const std::vector<std::string> keep = {"A", "B"};
  const std::vector<std::string> keep_reordered = {"B", "A"};
  CacheKeyParts p{"  so   good\t", "", "ja", "m", "", nullptr, nullptr};
  const std::string base = CacheKey(p);
  CacheKeyParts q = p;
  q.text = "so good";
  EXPECT_EQ(CacheKey(q), base);
  // NFC: a precomposed é and e + combining acute are one text.
  EXPECT_EQ(NormalizeText("caf\u00e9"), NormalizeText("cafe\u0301"));
  for (auto change : {+[](CacheKeyParts& x) { x.target = "ko"; }, +[](CacheKeyParts& x) { x.source = "en"; },
                      +[](CacheKeyParts& x) { x.model = "other"; }, +[](CacheKeyParts& x) { x.scope = "tenant"; },
                      +[](CacheKeyParts& x) { x.text = "so bad"; }}) {
    CacheKeyParts c = p;
    change(c);
    EXPECT_NE(CacheKey(c), base);
  }
  CacheKeyParts g1 = p, g2 = p;
  g1.keep = &keep;
  g2.keep = &keep_reordered;
  EXPECT_NE(CacheKey(g1), base);
  EXPECT_EQ(CacheKey(g1), CacheKey(g2));  // The glossary is a set.
  // Length-prefixed: a scope cannot spill into the model.
  CacheKeyParts s1 = p, s2 = p;
  s1.model = "m|1:x";
  s2.model = "m";
  s2.scope = "x";
  EXPECT_NE(CacheKey(s1), CacheKey(s2));
}

TEST(TranslationCacheTest, MemoryCacheIsAnLruBoundedByBytesWithATimeToLive) {
  FakeClock clock(1000);
  MemoryCache c(/*max_bytes=*/3 * (64 + 2 + 100), /*ttl_ns=*/10 * kNsPerSecond, &clock);
  const std::string v(100, 'v');
  c.Put("k1", v);
  c.Put("k2", v);
  c.Put("k3", v);
  EXPECT_EQ(c.stats().entries, 3u);
  EXPECT_EQ(Get(c, "k1"), v);  // k1 is now the most recent.
  c.Put("k4", v);              // Evicts k2, the least recent.
  EXPECT_EQ(Get(c, "k2"), std::nullopt);
  EXPECT_EQ(Get(c, "k1"), v);
  EXPECT_EQ(c.stats().evictions, 1u);
  EXPECT_EQ(c.stats().bytes, 3u * (64 + 2 + 100));
  clock.Advance(10 * kNsPerSecond);
  EXPECT_EQ(Get(c, "k3"), std::nullopt);  // Expired.
  EXPECT_EQ(c.stats().entries, 2u);
  const CacheStats s = c.stats();
  EXPECT_EQ(s.hits, 2u);
  EXPECT_EQ(s.misses, 2u);
  c.Put("big", std::string(1000, 'x'));  // Larger than the whole cache: not kept.
  EXPECT_EQ(Get(c, "big"), std::nullopt);
  c.Clear();
  EXPECT_EQ(c.stats().entries, 0u);
  EXPECT_EQ(c.stats().bytes, 0u);
  EXPECT_EQ(Get(c, "k1"), std::nullopt);
}

}  // namespace
}  // namespace swiftlet::translate
