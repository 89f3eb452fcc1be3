#include "kv/kv_row.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "kernels/backend.h"
#include "kernels/dequantize.h"
#include "kernels/float16.h"
#include "kernels/kv_row_encode.h"
#include "kv/kv_cache.h"
#include "kv/paged_kv_cache.h"
#include "kv_test_util.h"

namespace swiftlet {
namespace {

TEST(KvRowTest, BytesPerType) {
  EXPECT_EQ(KvRowBytes(TensorType::kF32, 64), 256u);
  EXPECT_EQ(KvRowBytes(TensorType::kF16, 64), 128u);
  EXPECT_EQ(KvRowBytes(TensorType::kQ8_0, 64), 68u);  // 2 blocks of 2 + 32 bytes
  EXPECT_EQ(KvRowBytes(TensorType::kQ8_0, 48), 0u);   // not whole blocks
  EXPECT_EQ(KvRowBytes(TensorType::kQ4_0, 64), 0u);
  EXPECT_EQ(KvRowBytes(TensorType::kF16, 0), 0u);
  EXPECT_STREQ(KvTypeProblem(TensorType::kF16, 80), "");
  EXPECT_STREQ(KvTypeProblem(TensorType::kQ8_0, 64), "");
  EXPECT_STRNE(KvTypeProblem(TensorType::kQ8_0, 80), "");
  EXPECT_STRNE(KvTypeProblem(TensorType::kBF16, 64), "");
}

TEST(KvRowTest, EncodedRowsDecodeToTheInputWithinEachTypesStep) {
  std::mt19937 rng(2);
  std::normal_distribution<float> dist(0, 3);
  std::vector<float> x(64), back(64);
  for (float& v : x) v = dist(rng);
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0}) {
    std::vector<uint8_t> row(KvRowBytes(t, 64));
    EncodeKvRow(t, x.data(), 64, row.data());
    DequantizeRow(t, row.data(), back.data(), 64);
    for (int i = 0; i < 64; ++i) {
      const float tol = t == TensorType::kF32 ? 0.0f : t == TensorType::kF16 ? std::abs(x[i]) / 1024 : 12.0f / 127;
      EXPECT_NEAR(back[i], x[i], tol) << NameOf(t) << " " << i;
    }
  }
}

TEST(KvRowTest, BothCachesStoreQ8Rows) {
  std::vector<float> k(64), v(64);
  for (int i = 0; i < 64; ++i) k[i] = 0.1f * static_cast<float>(i - 30), v[i] = 1.0f - 0.03f * static_cast<float>(i);
  std::vector<uint8_t> want_k(68), want_v(68);
  EncodeKvRow(TensorType::kQ8_0, k.data(), 64, want_k.data());
  EncodeKvRow(TensorType::kQ8_0, v.data(), 64, want_v.data());

  auto flat = KvCache::Create({1, 64, 1, 4, TensorType::kQ8_0}, 1 << 20);
  ASSERT_TRUE(flat.ok()) << flat.status();
  EXPECT_EQ(flat->type(), TensorType::kQ8_0);
  StoreRow(*flat, 0, 0, 2, k.data(), v.data(), 64);
  KvRows rows = flat->Rows(0, 0);
  EXPECT_EQ(rows.layer.row_bytes, 68u);
  EXPECT_EQ(std::memcmp(rows.K(2), want_k.data(), 68), 0);
  EXPECT_EQ(std::memcmp(rows.V(2), want_v.data(), 68), 0);

  PagedKvShape shape{.n_layer = 1, .kv_dim = 64, .block_tokens = 4, .n_blocks = 4, .type = TensorType::kQ8_0};
  EXPECT_EQ(PagedKvCache::BlockBytes(shape), 2u * 4 * 68);
  auto paged = PagedKvCache::Create(shape, 1 << 20);
  ASSERT_TRUE(paged.ok()) << paged.status();
  const int32_t seq = *paged->CreateSequence();
  ASSERT_TRUE(paged->Reserve(seq, 3).ok());
  StoreRow(*paged, 0, seq, 2, k.data(), v.data(), 64);
  rows = paged->Rows(0, seq);
  EXPECT_EQ(std::memcmp(rows.K(2), want_k.data(), 68), 0);
  EXPECT_EQ(std::memcmp(rows.V(2), want_v.data(), 68), 0);
}

}  // namespace
}  // namespace swiftlet
