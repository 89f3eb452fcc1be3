// Batch invariance: a sequence's logits are bit-identical whether it runs
// alone, beside other sequences, with its prompt split into chunks, or on a
// different number of threads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "forward_test_util.h"
#include "kv/kv_cache.h"
#include "model/model.h"

namespace swiftlet {
namespace {

TEST(ForwardTest, BatchInvariance) {
  for (const auto& [arch, type] : std::vector<std::pair<std::string, std::string>>{
           {"llama", "F32"}, {"llama", "F16"}, {"llama", "Q8_0"}, {"qwen2", "Q4_K_M"}, {"llama", "Q5_K_M"},
           {"qwen3", "Q4_0"}}) {
    SCOPED_TRACE(arch + " " + type);
    auto m = MakeModel(arch, type);
    ASSERT_NE(m, nullptr);
    for (TensorType kv : {TensorType::kF32, TensorType::kF16, TensorType::kQ8_0}) {
      const auto alone = RunSeqs(*m, {kSeqA, kSeqB}, 64, false, 1, kv);
      // Decoded one token at a time, mixed with the other sequence.
      const auto together_1 = RunSeqs(*m, {kSeqA, kSeqB}, 1, true, 2, kv);
      // Prompt in chunks of 5, both sequences per batch.
      const auto together_5 = RunSeqs(*m, {kSeqA, kSeqB}, 5, true, 2, kv);
      const auto chunked_alone = RunSeqs(*m, {kSeqA, kSeqB}, 3, false, 2, kv);
      for (size_t s = 0; s < 2; ++s) {
        ExpectBitIdentical(alone[s], together_1[s]);
        ExpectBitIdentical(alone[s], together_5[s]);
        ExpectBitIdentical(alone[s], chunked_alone[s]);
      }
    }
  }
}

TEST(ForwardTest, Q8KvCacheStaysCloseToF32) {
  auto m = MakeModel("llama", "Q8_0");
  ASSERT_NE(m, nullptr);
  const auto exact = RunSeqs(*m, {kSeqA}, 64, false, 1, TensorType::kF32);
  const auto q8 = RunSeqs(*m, {kSeqA}, 64, false, 1, TensorType::kQ8_0);
  ASSERT_EQ(exact[0].size(), q8[0].size());
  double err = 0, ref = 0;
  for (size_t i = 0; i < exact[0].size(); ++i) {
    err += (q8[0][i] - exact[0][i]) * (q8[0][i] - exact[0][i]);
    ref += exact[0][i] * exact[0][i];
  }
  // Q8_0 keeps about 1/254 of each block's range: the logits move by a
  // small fraction of their spread, and they do move (it is not F32).
  EXPECT_LT(std::sqrt(err / ref), 0.02);
  EXPECT_GT(err, 0.0);
}

// Rows asked for their argmax get their logits' first largest, whether or
// not their logits are asked for too, and the logits asked for beside them
// are the bits they are alone.
TEST(ForwardTest, ArgMaxRowsGetTheirLogitsFirstLargest) {
  for (const std::string type : {"F32", "Q4_K_M"}) {
    SCOPED_TRACE(type);
    auto m = MakeModel("qwen2", type);
    ASSERT_NE(m, nullptr);
    ExpectArgMaxRowsAreTheirLogitsFirstLargest(*m);
  }
}

TEST(ForwardTest, BadBatchesAreErrors) {
  auto m = MakeModel("llama", "F32");
  ASSERT_NE(m, nullptr);
  const ModelConfig& c = m->config();
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 8, TensorType::kF32}, 1 << 30);
  ASSERT_TRUE(cache.ok());
  ForwardContext ctx(1);
  ForwardOutput out;
  Batch bad_token;
  bad_token.Add(static_cast<int32_t>(c.n_vocab), 0, 0, true);
  EXPECT_FALSE(m->Forward(bad_token, *cache, ctx, out).ok());
  Batch bad_pos;
  bad_pos.Add(1, 8, 0, true);
  EXPECT_FALSE(m->Forward(bad_pos, *cache, ctx, out).ok());
  Batch bad_slot;
  bad_slot.Add(1, 0, 1, true);
  EXPECT_FALSE(m->Forward(bad_slot, *cache, ctx, out).ok());
  Batch bad_argmax_row;
  bad_argmax_row.Add(1, 0, 0, false);
  bad_argmax_row.argmax_rows = {1};
  EXPECT_FALSE(m->Forward(bad_argmax_row, *cache, ctx, out).ok());
}

}  // namespace
}  // namespace swiftlet

namespace swiftlet {
namespace {

TEST(RopeScalingTest, Llama3FactorsFollowTheWavelengthBands) {
  ModelConfig c;
  c.rope_dim = 128;
  c.rope_freq_base = 500000.0;
  c.rope_scaling = RopeScaling::kLlama3;
  c.rope_scaling_factor = 8.0;
  c.rope_low_freq_factor = 1.0;
  c.rope_high_freq_factor = 4.0;
  c.rope_original_context = 8192;
  const std::vector<float> f = Llama3FreqFactors(c);
  ASSERT_EQ(f.size(), 64u);
  for (size_t i = 0; i < f.size(); ++i) {
    const double wavelen = 2 * M_PI * std::pow(500000.0, 2.0 * i / 128);
    if (wavelen < 8192 / 4.0) {
      EXPECT_FLOAT_EQ(f[i], 1.0f) << i;  // Short wavelengths unchanged.
    } else if (wavelen > 8192 / 1.0) {
      EXPECT_FLOAT_EQ(f[i], 8.0f) << i;  // Long ones slowed by the factor.
    } else {
      EXPECT_GT(f[i], 1.0f);
      EXPECT_LT(f[i], 8.0f);
      if (i > 0) {
        EXPECT_GE(f[i], f[i - 1]);
      }
    }
  }
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[63], 8.0f);
}

}  // namespace
}  // namespace swiftlet
