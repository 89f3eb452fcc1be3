// A randomized run of the paged cache against an independent model of what
// each sequence holds: thousands of creates, forks, reserve+stores, prefix
// matches, commits and frees, checked after every operation.
//
// Rows are a function of (the sequence's tokens up to the position, layer,
// element): a prefix-cache hit must read back exactly what a cold run would
// have written, and a hit on the wrong prefix (even one with the same block
// tokens) reads back different rows.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "kv/paged_kv_cache.h"
#include "kv_test_util.h"

namespace swiftlet {
namespace {

constexpr int64_t kLayers = 2, kDim = 4, kBlockTokens = 4, kBlocks = 40;
constexpr int32_t kMaxSequences = 8;
constexpr int kOps = 4000;
constexpr int32_t kVocab = 50;

struct Param {
  TensorType type;
  bool weak_hash;  // A hash that collides all the time.
  uint64_t seed;
};

// What one sequence should hold, kept by the test alone.
struct Expected {
  std::vector<int32_t> tokens;
  std::vector<uint64_t> prints;  // prints[p]: fingerprint of tokens[0..p].
  std::vector<int32_t> plan;     // Tokens it grows by, when it has them.

  void Append(int32_t token) {
    const uint64_t prev = prints.empty() ? 0x5eed : prints.back();
    prints.push_back(SplitMix(prev * 1000003 + static_cast<uint64_t>(token)));
    tokens.push_back(token);
  }
};

float RowValue(const Expected& e, int64_t pos, int64_t layer, int64_t i, bool value) {
  return ExactValue(e.prints[static_cast<size_t>(pos)], pos, layer, i, value);
}

class PagedKvPropertyTest : public ::testing::TestWithParam<Param> {
 protected:
  void Verify(const PagedKvCache& cache, const std::map<int32_t, Expected>& model) {
    ASSERT_EQ(cache.sequences(), static_cast<int32_t>(model.size()));
    std::vector<int32_t> refs(kBlocks, 0);
    for (const auto& [id, e] : model) {
      ASSERT_TRUE(cache.Exists(id));
      const int64_t len = static_cast<int64_t>(e.tokens.size());
      ASSERT_EQ(cache.length(id), len) << "seq " << id;
      const auto blocks = cache.blocks(id);
      ASSERT_EQ(static_cast<int64_t>(blocks.size()), (len + kBlockTokens - 1) / kBlockTokens);
      std::vector<bool> seen(kBlocks, false);
      for (int32_t b : blocks) {
        ASSERT_FALSE(seen[b]) << "block " << b << " twice in seq " << id;
        seen[b] = true;
        ++refs[b];
      }
      for (int64_t l = 0; l < kLayers; ++l) {
        const KvRows rows = cache.Rows(l, id);
        for (int64_t p = 0; p < len; ++p) {
          for (bool v : {false, true}) {
            const std::vector<float> got = ReadRow(rows, p, v, kDim);
            for (int64_t i = 0; i < kDim; ++i) {
              ASSERT_EQ(got[i], RowValue(e, p, l, i, v))
                  << "seq " << id << " pos " << p << " layer " << l << " v " << v;
            }
          }
        }
      }
    }
    int64_t in_use = 0;
    for (int32_t b = 0; b < kBlocks; ++b) {
      ASSERT_EQ(cache.refcount(b), refs[b]) << "block " << b;
      in_use += refs[b] > 0;
    }
    ASSERT_EQ(cache.blocks_in_use(), in_use);
    ASSERT_EQ(cache.blocks_free() + cache.blocks_cached() + cache.blocks_in_use(), kBlocks);
    const std::vector<int32_t> lru = cache.EvictionOrder();
    ASSERT_EQ(static_cast<int64_t>(lru.size()), cache.blocks_cached());
    for (int32_t b : lru) {
      ASSERT_EQ(refs[b], 0);
      ASSERT_TRUE(cache.IsCached(b));
    }
    // Shared and cached blocks refuse writes; a sequence's own others take them.
    for (const auto& [id, e] : model) {
      const auto blocks = cache.blocks(id);
      for (size_t i = 0; i < blocks.size(); ++i) {
        const bool frozen = refs[blocks[i]] > 1 || cache.IsCached(blocks[i]);
        ASSERT_EQ(cache.CheckWritable(id, static_cast<int64_t>(i) * kBlockTokens).ok(), !frozen)
            << "seq " << id << " block " << blocks[i];
      }
    }
  }
};

TEST_P(PagedKvPropertyTest, RandomOperationsKeepEverySequenceIntact) {
  const Param param = GetParam();
  PagedKvShape shape{.n_layer = kLayers, .kv_dim = kDim, .block_tokens = kBlockTokens,
                     .n_blocks = kBlocks, .type = param.type, .max_sequences = kMaxSequences};
  auto created = PagedKvCache::Create(shape, uint64_t{1} << 30);
  ASSERT_TRUE(created.ok()) << created.status();
  PagedKvCache& cache = *created;
  if (param.weak_hash) {
    cache.SetChainHashForTesting([](uint64_t parent, std::span<const int32_t> t) {
      return (parent * 7 + static_cast<uint64_t>(t[0])) % 5;
    });
  }

  std::mt19937_64 rng(param.seed);
  auto below = [&](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  // A few shared prompt heads, so prefixes repeat.
  std::vector<std::vector<int32_t>> heads(3);
  for (auto& h : heads) {
    for (int i = 0; i < 40; ++i) h.push_back(static_cast<int32_t>(below(kVocab)));
  }
  auto make_plan = [&]() {
    const auto& head = heads[static_cast<size_t>(below(heads.size()))];
    std::vector<int32_t> plan(head.begin(), head.begin() + below(head.size() + 1));
    for (int64_t n = below(20); n > 0; --n) plan.push_back(static_cast<int32_t>(below(kVocab)));
    return plan;
  };

  std::map<int32_t, Expected> model;
  auto pick = [&]() {
    auto it = model.begin();
    std::advance(it, below(model.size()));
    return it->first;
  };
  int reserve_failures = 0, forks = 0;
  for (int op = 0; op < kOps; ++op) {
    SCOPED_TRACE(::testing::Message() << "op " << op);
    const int64_t r = below(100);
    const bool room = static_cast<int32_t>(model.size()) < kMaxSequences;
    if (model.empty() || (r < 8 && room)) {
      auto id = cache.CreateSequence();
      ASSERT_TRUE(id.ok()) << id.status();
      Expected e;
      e.plan = make_plan();
      model[*id] = std::move(e);
    } else if (r < 20 && room) {
      auto id = cache.CreateSequence();
      ASSERT_TRUE(id.ok()) << id.status();
      Expected e;
      e.plan = make_plan();
      const int64_t max_tokens = std::max<int64_t>(0, static_cast<int64_t>(e.plan.size()) - 1);
      auto m = cache.MatchPrefix(*id, e.plan, max_tokens);
      ASSERT_TRUE(m.ok()) << m.status();
      ASSERT_EQ(*m % kBlockTokens, 0);
      ASSERT_LE(*m, max_tokens);
      for (int64_t p = 0; p < *m; ++p) e.Append(e.plan[static_cast<size_t>(p)]);
      model[*id] = std::move(e);
    } else if (r < 28 && room) {
      const int32_t from = pick();
      auto id = cache.Fork(from);
      ASSERT_TRUE(id.ok()) << id.status();
      Expected e = model[from];
      if (below(2) == 0) {  // Diverge at once; else follow the same plan.
        e.plan = e.tokens;
        for (int64_t n = below(20); n > 0; --n) {
          e.plan.push_back(static_cast<int32_t>(below(kVocab)));
        }
      }
      model[*id] = std::move(e);
      ++forks;
    } else if (r < 70) {
      const int32_t id = pick();
      Expected& e = model[id];
      const int64_t len = static_cast<int64_t>(e.tokens.size());
      const int64_t k = 1 + below(10);
      const std::vector<int32_t> blocks_before(cache.blocks(id).begin(), cache.blocks(id).end());
      const int64_t free_before = cache.blocks_free(), cached_before = cache.blocks_cached();
      const absl::Status st = cache.Reserve(id, len + k);
      if (!st.ok()) {
        ASSERT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
        ASSERT_EQ(cache.length(id), len);
        ASSERT_EQ(std::vector<int32_t>(cache.blocks(id).begin(), cache.blocks(id).end()),
                  blocks_before);
        ASSERT_EQ(cache.blocks_free(), free_before);
        ASSERT_EQ(cache.blocks_cached(), cached_before);
        ++reserve_failures;
      } else {
        for (int64_t p = len; p < len + k; ++p) {
          ASSERT_TRUE(cache.CheckWritable(id, p).ok()) << cache.CheckWritable(id, p);
          e.Append(p < static_cast<int64_t>(e.plan.size()) ? e.plan[static_cast<size_t>(p)]
                                                           : static_cast<int32_t>(below(kVocab)));
        }
        StoreRows(cache, id, len, len + k, [&](int64_t pos, int64_t l, int64_t i, bool v) {
          return RowValue(e, pos, l, i, v);
        });
      }
    } else if (r < 85) {
      const int32_t id = pick();
      ASSERT_TRUE(cache.Commit(id, model[id].tokens).ok());
    } else {
      const int32_t id = pick();
      ASSERT_TRUE(cache.Free(id).ok());
      model.erase(id);
    }
    ASSERT_NO_FATAL_FAILURE(Verify(cache, model));
  }

  for (const auto& [id, e] : model) ASSERT_TRUE(cache.Free(id).ok());
  model.clear();
  ASSERT_NO_FATAL_FAILURE(Verify(cache, model));
  EXPECT_EQ(cache.blocks_in_use(), 0);
  EXPECT_EQ(cache.blocks_free() + cache.blocks_cached(), cache.blocks_total());
  int64_t registered = 0;
  for (int32_t b = 0; b < kBlocks; ++b) registered += cache.IsCached(b);
  EXPECT_EQ(registered, cache.blocks_cached());

  // The run went through the interesting paths.
  const PrefixCacheStats& st = cache.prefix_stats();
  EXPECT_GT(st.hit_tokens, 0u);
  EXPECT_GT(st.evictions, 0u);
  EXPECT_GT(reserve_failures, 0);
  EXPECT_GT(forks, 0);
  if (param.weak_hash) {
    EXPECT_GT(st.collisions, 0u);
  } else {
    EXPECT_EQ(st.collisions, 0u);  // Only an injected hash collides.
  }
  std::printf("hits %llu/%llu tokens, %llu evictions, %llu collisions, %llu stale, %d full "
              "reserves\n",
              static_cast<unsigned long long>(st.hit_tokens),
              static_cast<unsigned long long>(st.query_tokens),
              static_cast<unsigned long long>(st.evictions),
              static_cast<unsigned long long>(st.collisions),
              static_cast<unsigned long long>(st.stale_dropped), reserve_failures);
}

INSTANTIATE_TEST_SUITE_P(
    Types, PagedKvPropertyTest,
    ::testing::Values(Param{TensorType::kF32, false, 1}, Param{TensorType::kF16, false, 2},
                      Param{TensorType::kF32, true, 3}, Param{TensorType::kF16, true, 4}),
    [](const ::testing::TestParamInfo<Param>& info) {
      return std::string(info.param.type == TensorType::kF32 ? "F32" : "F16") +
             (info.param.weak_hash ? "WeakHash" : "");
    });

}  // namespace
}  // namespace swiftlet
