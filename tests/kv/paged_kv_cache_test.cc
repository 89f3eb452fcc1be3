#include "kv/paged_kv_cache.h"

#include <gtest/gtest.h>

#include <bit>
#include <numeric>
#include <vector>

#include "kernels/float16.h"
#include "kv_test_util.h"

namespace swiftlet {
namespace {

// Rounds to F16 precision, nearest even, for normal-range values: a second
// implementation to check the cache's conversion against.
float RoundToF16(float x) {
  uint32_t b = std::bit_cast<uint32_t>(x);
  b += 0xfffu + ((b >> 13) & 1u);
  return std::bit_cast<float>(b & ~0x1fffu);
}

TEST(PagedKvCacheTest, SizesAndRejectedShapes) {
  PagedKvShape shape{.n_layer = 2, .kv_dim = 8, .block_tokens = 4, .n_blocks = 10};
  // 2 layers x (K + V) x 4 rows x 8 halves x 2 bytes.
  EXPECT_EQ(PagedKvCache::BlockBytes(shape), 256u);
  EXPECT_EQ(PagedKvCache::BlocksForBytes(shape, 1000), 3);
  auto ok = PagedKvCache::Create(shape, 2560);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->bytes(), 2560u);
  EXPECT_EQ(ok->block_bytes(), 256u);
  EXPECT_EQ(ok->blocks_total(), 10);
  EXPECT_EQ(ok->blocks_free(), 10);

  auto over = PagedKvCache::Create(shape, 2559);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(over.status().message().find("2560"), std::string::npos) << over.status();

  PagedKvShape q8 = shape;
  q8.type = TensorType::kQ8_0;
  auto bad_type = PagedKvCache::Create(q8, uint64_t{1} << 30);
  EXPECT_EQ(bad_type.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_type.status().message().find("Q8_0"), std::string::npos) << bad_type.status();
  EXPECT_EQ(PagedKvCache::BlockBytes(q8), 0u);

  PagedKvShape empty = shape;
  empty.n_blocks = 0;
  EXPECT_FALSE(PagedKvCache::Create(empty, uint64_t{1} << 30).ok());
  PagedKvShape huge = shape;
  huge.block_tokens = int64_t{1} << 60;
  EXPECT_FALSE(PagedKvCache::Create(huge, UINT64_MAX).ok());
}

TEST(PagedKvCacheTest, StoresAndReadsBackF32) {
  PagedKvCache cache = MakeCache(8, TensorType::kF32);
  const int32_t s = NewSeq(cache);
  PagedKvShape shape = cache.shape();
  ASSERT_TRUE(cache.Reserve(s, 10).ok());
  EXPECT_EQ(cache.length(s), 10);
  EXPECT_EQ(cache.blocks(s).size(), 3u);
  // Arbitrary floats survive unchanged.
  auto fn = [](int64_t pos, int64_t l, int64_t i, bool v) {
    return 0.1f * static_cast<float>(pos) - 1.7f * static_cast<float>(l) +
           0.013f * static_cast<float>(i) + (v ? 100.0f : -3.0f);
  };
  StoreRows(cache, s, 0, 10, fn);
  for (int64_t l = 0; l < shape.n_layer; ++l) {
    const KvRows rows = cache.Rows(l, s);
    EXPECT_EQ(rows.layer.block_rows, 4);
    EXPECT_EQ(rows.layer.row_bytes, 32u);
    EXPECT_EQ(rows.layer.type, TensorType::kF32);
    for (int64_t p = 0; p < 10; ++p) {
      for (bool v : {false, true}) {
        const std::vector<float> got = ReadRow(rows, p, v, shape.kv_dim);
        for (int64_t i = 0; i < shape.kv_dim; ++i) EXPECT_EQ(got[i], fn(p, l, i, v));
      }
    }
  }
}

TEST(PagedKvCacheTest, StoresAndReadsBackF16Rounded) {
  PagedKvCache cache = MakeCache(8, TensorType::kF16);
  const int32_t s = NewSeq(cache);
  ASSERT_TRUE(cache.Reserve(s, 7).ok());
  auto fn = [](int64_t pos, int64_t l, int64_t i, bool v) {
    return (v ? -1.0f : 1.0f) * (0.3337f * static_cast<float>(pos + 1) +
                                 0.0771f * static_cast<float>(i) + 2.9f * static_cast<float>(l));
  };
  StoreRows(cache, s, 0, 7, fn);
  int rounded = 0;
  for (int64_t l = 0; l < 2; ++l) {
    const KvRows rows = cache.Rows(l, s);
    EXPECT_EQ(rows.layer.row_bytes, 16u);
    EXPECT_EQ(rows.layer.type, TensorType::kF16);
    for (int64_t p = 0; p < 7; ++p) {
      for (bool v : {false, true}) {
        const std::vector<float> got = ReadRow(rows, p, v, 8);
        for (int64_t i = 0; i < 8; ++i) {
          const float want = RoundToF16(fn(p, l, i, v));
          EXPECT_EQ(got[i], want) << p << " " << i;
          rounded += want != fn(p, l, i, v);
        }
      }
    }
  }
  EXPECT_GT(rounded, 100);  // The values really needed rounding.
  // A value between two halves rounds to the nearer one, ties to even.
  EXPECT_EQ(RoundToF16(1.0f + 1.0f / 2048), 1.0f);
  EXPECT_EQ(RoundToF16(1.0f + 3.0f / 2048), 1.0f + 2.0f / 1024);
  EXPECT_EQ(Fp16ToFp32(Fp32ToFp16(1.0f + 3.0f / 2048)), 1.0f + 2.0f / 1024);
}

TEST(PagedKvCacheTest, ForkSharesBlocksAndCopiesThePartialOneOnWrite) {
  PagedKvCache cache = MakeCache(8);
  const int32_t a = NewSeq(cache);
  Extend(cache, a, 6, /*salt=*/1);  // One full block, one with 2 of 4 rows.
  auto forked = cache.Fork(a);
  ASSERT_TRUE(forked.ok());
  const int32_t b = *forked;
  EXPECT_EQ(cache.length(b), 6);
  EXPECT_EQ(cache.blocks_in_use(), 2);
  const std::vector<int32_t> a_blocks(cache.blocks(a).begin(), cache.blocks(a).end());
  ASSERT_EQ(a_blocks.size(), 2u);
  EXPECT_EQ(std::vector<int32_t>(cache.blocks(b).begin(), cache.blocks(b).end()), a_blocks);
  EXPECT_EQ(cache.refcount(a_blocks[0]), 2);
  EXPECT_EQ(cache.refcount(a_blocks[1]), 2);
  ExpectRows(cache, b, 0, 6, 1);
  // Shared rows cannot be written by either sequence.
  EXPECT_EQ(cache.CheckWritable(a, 5).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(cache.CheckWritable(b, 0).code(), absl::StatusCode::kFailedPrecondition);

  // b grows: its partial block is copied, the full one stays shared.
  EXPECT_EQ(cache.BlocksNeeded(b, 1), 1);
  EXPECT_EQ(cache.BlocksNeeded(b, 3), 2);
  ASSERT_TRUE(cache.Reserve(b, 7).ok());
  EXPECT_EQ(cache.blocks_in_use(), 3);
  EXPECT_EQ(cache.blocks(b)[0], a_blocks[0]);
  EXPECT_NE(cache.blocks(b)[1], a_blocks[1]);
  EXPECT_EQ(cache.refcount(a_blocks[0]), 2);
  EXPECT_EQ(cache.refcount(a_blocks[1]), 1);
  ExpectRows(cache, b, 0, 6, 1);  // The copy holds a's rows.
  ASSERT_TRUE(cache.CheckWritable(b, 6).ok());
  StoreRows(cache, b, 6, 7, [](int64_t p, int64_t l, int64_t i, bool v) {
    return ExactValue(2, p, l, i, v);
  });
  ExpectRows(cache, b, 6, 7, 2);
  ExpectRows(cache, a, 0, 6, 1);  // a is untouched.

  // a is now alone in its partial block: it grows in place.
  EXPECT_EQ(cache.BlocksNeeded(a, 2), 0);
  Extend(cache, a, 8, 3);
  EXPECT_EQ(cache.blocks_in_use(), 3);
  ExpectRows(cache, a, 0, 6, 1);
  ExpectRows(cache, a, 6, 8, 3);
  ExpectRows(cache, b, 0, 6, 1);
  ExpectRows(cache, b, 6, 7, 2);

  // A fork of whole blocks only takes new blocks.
  auto c = cache.Fork(a);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache.BlocksNeeded(*c, 1), 1);
  Extend(cache, *c, 9, 4);
  EXPECT_EQ(cache.blocks_in_use(), 4);
  EXPECT_EQ(cache.refcount(a_blocks[0]), 3);
  ExpectRows(cache, *c, 0, 6, 1);
  ExpectRows(cache, *c, 8, 9, 4);

  for (int32_t s : {a, b, *c}) ASSERT_TRUE(cache.Free(s).ok());
  EXPECT_EQ(cache.blocks_in_use(), 0);
  EXPECT_EQ(cache.blocks_free(), 8);
}

TEST(PagedKvCacheTest, ReserveIsAllOrNothing) {
  PagedKvCache cache = MakeCache(4);
  const int32_t a = NewSeq(cache);
  Extend(cache, a, 10, 1);  // 3 blocks.
  const int32_t b = NewSeq(cache);
  const absl::Status full = cache.Reserve(b, 8);  // 2 blocks, 1 free.
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_EQ(cache.length(b), 0);
  EXPECT_TRUE(cache.blocks(b).empty());
  EXPECT_EQ(cache.blocks_free(), 1);

  // A fork needing a copy plus new blocks: nothing happens unless all fit.
  auto c = cache.Fork(a);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(cache.BlocksNeeded(*c, 3), 2);  // Copy + 1 new.
  EXPECT_EQ(cache.Reserve(*c, 13).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache.length(*c), 10);
  EXPECT_EQ(std::vector<int32_t>(cache.blocks(*c).begin(), cache.blocks(*c).end()),
            std::vector<int32_t>(cache.blocks(a).begin(), cache.blocks(a).end()));
  EXPECT_EQ(cache.refcount(cache.blocks(a)[2]), 2);
  EXPECT_EQ(cache.blocks_free(), 1);
  ExpectRows(cache, *c, 0, 10, 1);
  // Beyond what the whole cache holds.
  EXPECT_EQ(cache.Reserve(b, 17).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_GT(cache.BlocksNeeded(b, int64_t{1} << 62), cache.blocks_total());

  Extend(cache, *c, 12, 2);  // The copy alone fits.
  EXPECT_EQ(cache.blocks_free(), 0);
  ExpectRows(cache, a, 0, 10, 1);
  ExpectRows(cache, *c, 0, 10, 1);
  ExpectRows(cache, *c, 10, 12, 2);
}

TEST(PagedKvCacheTest, CheckWritableNamesTheProblem) {
  PagedKvCache cache = MakeCache(4);
  EXPECT_EQ(cache.CheckWritable(0, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.CheckWritable(-1, 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cache.CheckWritable(99, 0).code(), absl::StatusCode::kInvalidArgument);
  const int32_t a = NewSeq(cache);
  EXPECT_EQ(cache.CheckWritable(a, 0).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(cache.Reserve(a, 3).ok());
  EXPECT_TRUE(cache.CheckWritable(a, 2).ok());
  EXPECT_FALSE(cache.CheckWritable(a, 3).ok());
  EXPECT_FALSE(cache.CheckWritable(a, -1).ok());
  EXPECT_FALSE(cache.Reserve(a + 1, 3).ok());
  EXPECT_FALSE(cache.Free(a + 1).ok());
  EXPECT_FALSE(cache.Fork(a + 1).ok());
}

TEST(PagedKvCacheTest, SequenceIdsAreBoundedAndReused) {
  PagedKvCache cache = MakeCache(4, TensorType::kF32, /*max_sequences=*/2);
  EXPECT_EQ(NewSeq(cache), 0);
  EXPECT_EQ(NewSeq(cache), 1);
  EXPECT_EQ(cache.CreateSequence().status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache.Fork(0).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(cache.sequences(), 2);
  ASSERT_TRUE(cache.Free(0).ok());
  EXPECT_FALSE(cache.Exists(0));
  EXPECT_EQ(NewSeq(cache), 0);
}

}  // namespace
}  // namespace swiftlet
