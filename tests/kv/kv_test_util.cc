#include "kv_test_util.h"

#include <gtest/gtest.h>

#include <cstring>

#include "kernels/float16.h"

namespace swiftlet {

std::vector<float> ReadRow(const KvRows& rows, int64_t j, bool value, int64_t kv_dim) {
  const uint8_t* p = value ? rows.V(j) : rows.K(j);
  std::vector<float> out(static_cast<size_t>(kv_dim));
  for (int64_t i = 0; i < kv_dim; ++i) {
    if (rows.layer.type == TensorType::kF32) {
      std::memcpy(&out[i], p + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, p + i * 2, 2);
      out[i] = Fp16ToFp32(h);
    }
  }
  return out;
}

void StoreRow(KvStore& cache, int64_t layer, int32_t seq, int32_t pos, const float* k,
              const float* v, int64_t kv_dim) {
  const std::span<const int32_t> table = cache.BlockTable(seq);
  const int32_t start = 0;
  const KvBatch batch{cache.Layer(layer), table.data(), &start};
  MakeCpuBackend(1)->StoreKv(k, v, 1, &pos, batch, kv_dim);
}

void StoreRows(PagedKvCache& cache, int32_t seq, int64_t from, int64_t to, const RowFn& fn) {
  const int64_t kv_dim = cache.shape().kv_dim;
  std::vector<float> k(static_cast<size_t>(kv_dim)), v(static_cast<size_t>(kv_dim));
  for (int64_t l = 0; l < cache.shape().n_layer; ++l) {
    for (int64_t pos = from; pos < to; ++pos) {
      for (int64_t i = 0; i < kv_dim; ++i) {
        k[i] = fn(pos, l, i, false);
        v[i] = fn(pos, l, i, true);
      }
      StoreRow(cache, l, seq, static_cast<int32_t>(pos), k.data(), v.data(), kv_dim);
    }
  }
  for (int64_t pos = from; pos < to; ++pos) cache.MarkStored(seq, pos);
}

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

float ExactValue(uint64_t salt, int64_t pos, int64_t layer, int64_t i, bool value) {
  uint64_t h = SplitMix(salt);
  h = SplitMix(h ^ static_cast<uint64_t>(pos));
  h = SplitMix(h ^ (static_cast<uint64_t>(layer) << 32 | static_cast<uint64_t>(i) << 1 | value));
  return static_cast<float>(static_cast<int64_t>(h % 2001) - 1000) / 64.0f;
}

PagedKvCache MakeCache(int64_t n_blocks, TensorType type, int32_t max_sequences) {
  PagedKvShape shape{.n_layer = 2, .kv_dim = 8, .block_tokens = 4, .n_blocks = n_blocks,
                     .type = type, .max_sequences = max_sequences};
  auto cache = PagedKvCache::Create(shape, uint64_t{1} << 30);
  EXPECT_TRUE(cache.ok()) << cache.status();
  return std::move(*cache);
}

int32_t NewSeq(PagedKvCache& cache) {
  auto id = cache.CreateSequence();
  EXPECT_TRUE(id.ok()) << id.status();
  return *id;
}

void Extend(PagedKvCache& cache, int32_t seq, int64_t to, uint64_t salt) {
  const int64_t from = cache.length(seq);
  ASSERT_TRUE(cache.Reserve(seq, to).ok());
  for (int64_t p = from; p < to; ++p) ASSERT_TRUE(cache.CheckWritable(seq, p).ok()) << p;
  StoreRows(cache, seq, from, to, [&](int64_t pos, int64_t l, int64_t i, bool v) {
    return ExactValue(salt, pos, l, i, v);
  });
}

void ExpectRows(const PagedKvCache& cache, int32_t seq, int64_t from, int64_t to, uint64_t salt) {
  const int64_t D = cache.shape().kv_dim;
  for (int64_t l = 0; l < cache.shape().n_layer; ++l) {
    const KvRows rows = cache.Rows(l, seq);
    for (int64_t p = from; p < to; ++p) {
      for (bool v : {false, true}) {
        const std::vector<float> got = ReadRow(rows, p, v, D);
        for (int64_t i = 0; i < D; ++i) {
          ASSERT_EQ(got[i], ExactValue(salt, p, l, i, v))
              << "seq " << seq << " layer " << l << " pos " << p << " v " << v << " i " << i;
        }
      }
    }
  }
}

}  // namespace swiftlet
