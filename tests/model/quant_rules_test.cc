#include "model/quant_rules.h"

#include <gtest/gtest.h>

#include <set>

namespace swiftlet {
namespace {

TensorType Choose(std::string_view target, const std::string& name, std::vector<int64_t> shape,
                  int n_layer = 22, bool tied = false) {
  return ChooseTensorType(*ParseQuantTarget(target), {name, shape, n_layer}, tied);
}

TEST(QuantRulesTest, Q4KMGivesSensitiveLayersSixBits) {
  // For 22 layers the rule reads: layers below 22/8 = 2, layers from
  // 7*22/8 = 19 on, and every third layer counting from 2 (4, 7, ..., 16).
  const std::set<int> expected = {0, 1, 4, 7, 10, 13, 16, 19, 20, 21};
  for (int layer = 0; layer < 22; ++layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    const TensorType want = expected.count(layer) ? TensorType::kQ6_K : TensorType::kQ4_K;
    EXPECT_EQ(Choose("Q4_K_M", b + "attn_v.weight", {2048, 256}), want) << layer;
    EXPECT_EQ(Choose("Q4_K_M", b + "ffn_down.weight", {5632, 2048}), want) << layer;
    EXPECT_EQ(Choose("Q4_K_M", b + "attn_q.weight", {2048, 2048}), TensorType::kQ4_K);
    EXPECT_EQ(Choose("Q4_K_M", b + "ffn_gate.weight", {2048, 5632}), TensorType::kQ4_K);
    EXPECT_EQ(Choose("Q4_K_M", b + "attn_norm.weight", {2048}), TensorType::kF32);
  }
  EXPECT_EQ(Choose("Q4_K_M", "output.weight", {2048, 32000}), TensorType::kQ6_K);
  EXPECT_EQ(Choose("Q4_K_M", "token_embd.weight", {2048, 32000}), TensorType::kQ4_K);
  EXPECT_EQ(Choose("Q4_K_M", "token_embd.weight", {2048, 32000}, 22, /*tied=*/true),
            TensorType::kQ6_K);
}

TEST(QuantRulesTest, Q5KMIsTheQ4KMRuleOnQ5K) {
  const std::set<int> expected = {0, 1, 4, 7, 10, 13, 16, 19, 20, 21};
  for (int layer = 0; layer < 22; ++layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    const TensorType want = expected.count(layer) ? TensorType::kQ6_K : TensorType::kQ5_K;
    EXPECT_EQ(Choose("Q5_K_M", b + "ffn_down.weight", {5632, 2048}), want) << layer;
    EXPECT_EQ(Choose("q5_k_m", b + "attn_k.weight", {2048, 256}), TensorType::kQ5_K);
  }
  EXPECT_EQ(Choose("Q5_K_M", "output.weight", {2048, 32000}), TensorType::kQ6_K);
  EXPECT_EQ(Choose("Q5_K_M", "blk.3.attn_q.weight", {576, 576}, 30), TensorType::kQ8_0);
  EXPECT_EQ(ParseQuantTarget("Q5_K_M")->llama_file_type, 17u);
}

TEST(QuantRulesTest, RowsThatBlocksDoNotDivideFallBack) {
  // 576 = 2.25 x 256: no K-quant fits, Q8_0 (32-element blocks) does.
  EXPECT_EQ(Choose("Q4_K_M", "blk.3.attn_q.weight", {576, 576}, 30), TensorType::kQ8_0);
  EXPECT_EQ(Choose("Q4_K_M", "output.weight", {576, 49152}, 30), TensorType::kQ8_0);
  EXPECT_EQ(Choose("Q6_K", "blk.0.ffn_up.weight", {576, 1536}), TensorType::kQ8_0);
  // 48 is not a multiple of 32: only F16 fits.
  EXPECT_EQ(Choose("Q4_K_M", "blk.0.attn_q.weight", {48, 48}), TensorType::kF16);
  EXPECT_EQ(Choose("Q4_0", "blk.0.attn_q.weight", {48, 48}), TensorType::kF16);
  EXPECT_EQ(Choose("F16", "blk.0.attn_q.weight", {48, 48}), TensorType::kF16);
}

TEST(QuantRulesTest, PlainTargets) {
  EXPECT_EQ(Choose("f16", "blk.0.attn_q.weight", {64, 64}), TensorType::kF16);
  EXPECT_EQ(Choose("Q8_0", "output.weight", {64, 64}), TensorType::kQ8_0);
  EXPECT_EQ(Choose("Q4_0", "blk.0.ffn_down.weight", {64, 64}), TensorType::kQ4_0);
  EXPECT_EQ(Choose("Q4_0", "output.weight", {256, 64}), TensorType::kQ6_K);
  EXPECT_EQ(Choose("Q8_0", "output_norm.weight", {64}), TensorType::kF32);
}

TEST(QuantRulesTest, UnknownTargetIsAnErrorListingTheChoices) {
  auto t = ParseQuantTarget("Q3_K_S");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(std::string(t.status().message()).find("Q4_K_M"), std::string::npos);
}

TEST(QuantRulesTest, LayerOfTensor) {
  EXPECT_EQ(LayerOfTensor("blk.17.attn_v.weight"), 17);
  EXPECT_EQ(LayerOfTensor("output.weight"), -1);
  EXPECT_EQ(LayerOfTensor("blk.x.attn_v.weight"), -1);
  EXPECT_EQ(LayerOfTensor("blk.3"), -1);
}

}  // namespace
}  // namespace swiftlet
