#include "engine/embedding_worker.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <future>

#include "kv/kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "model/quant_rules.h"
#include "model/random_model.h"

namespace swiftlet {
namespace {

TEST(PoolingTest, MeanFirstLastAreNormalised) {
  // Rows (3, 4) and (1, -4): mean (2, 0) -> (1, 0); first (0.6, 0.8); last.
  const float rows[] = {3, 4, 1, -4};
  EXPECT_EQ(PoolAndNormalize(rows, 2, 2, Pooling::kMean), (std::vector<float>{1, 0}));
  auto first = PoolAndNormalize(rows, 2, 2, Pooling::kFirst);
  EXPECT_FLOAT_EQ(first[0], 0.6f);
  EXPECT_FLOAT_EQ(first[1], 0.8f);
  auto last = PoolAndNormalize(rows, 2, 2, Pooling::kLast);
  EXPECT_FLOAT_EQ(last[0], 1 / std::sqrt(17.0f));
  EXPECT_FLOAT_EQ(last[1], -4 / std::sqrt(17.0f));
  const float zero[] = {0, 0, 0};
  EXPECT_EQ(PoolAndNormalize(zero, 1, 3, Pooling::kMean), (std::vector<float>{0, 0, 0}));
}

TEST(PoolingTest, FromTheConfigsPoolingType) {
  auto pooling_of = [](int64_t type) {
    ModelConfig c;
    c.pooling_type = type;
    return PoolingFor(c);
  };
  EXPECT_EQ(*pooling_of(ModelConfig::kPoolingAbsent), Pooling::kMean);
  EXPECT_EQ(*pooling_of(0), Pooling::kMean);
  EXPECT_EQ(*pooling_of(1), Pooling::kMean);
  EXPECT_EQ(*pooling_of(2), Pooling::kFirst);
  EXPECT_EQ(*pooling_of(3), Pooling::kLast);
  for (int64_t bad : {int64_t{4}, ModelConfig::kPoolingMalformed}) {
    auto p = pooling_of(bad);
    ASSERT_FALSE(p.ok());
    EXPECT_NE(std::string(p.status().message()).find("llama.pooling_type"), std::string::npos);
  }
}

class EmbeddingWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    RandomModelSpec spec = *RandomModelPreset("tiny");
    spec.n_embd = 128;
    spec.n_layer = 2;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    spec.n_ff = 256;
    spec.n_ctx = 256;
    spec.weights = *ParseQuantTarget("Q8_0");
    const std::string path = ::testing::TempDir() + "/embed_tiny." + std::to_string(::getpid()) + ".gguf";
    ASSERT_TRUE(WriteRandomModel(spec, path, 2).ok());
    auto m = Model::Load(path);
    ASSERT_TRUE(m.ok()) << m.status();
    model_ = m->release();
  }

  static EmbeddingResult Embed(EmbeddingWorker& w, std::vector<std::vector<int32_t>> inputs) {
    std::promise<absl::StatusOr<EmbeddingResult>> p;
    EXPECT_TRUE(w.Submit(std::move(inputs), [&](absl::StatusOr<EmbeddingResult> r) { p.set_value(std::move(r)); }));
    auto r = p.get_future().get();
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : EmbeddingResult{};
  }

  // The pooled hidden states of one forward pass over the whole input.
  static std::vector<float> Reference(const std::vector<int32_t>& input, Pooling pooling) {
    const ModelConfig& c = model_->config();
    auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 256, TensorType::kF16}, uint64_t{1} << 30);
    ForwardContext ctx(1);
    ForwardOutput out;
    Batch b;
    b.want_hidden = true;
    for (size_t i = 0; i < input.size(); ++i) b.Add(input[i], static_cast<int32_t>(i), 0, true);
    EXPECT_TRUE(model_->Forward(b, *cache, ctx, out).ok());
    return PoolAndNormalize(out.values.data(), static_cast<int64_t>(input.size()), c.n_embd, pooling);
  }

  static inline const Model* model_ = nullptr;
};

TEST_F(EmbeddingWorkerTest, ChunkedRunsGiveTheOneBatchResult) {
  const std::vector<int32_t> a = {1, 50, 60, 70, 80, 90, 100};
  const std::vector<int32_t> b = {1, 7, 9};
  for (Pooling pooling : {Pooling::kMean, Pooling::kFirst, Pooling::kLast}) {
    EmbeddingWorkerOptions o;
    o.chunk_tokens = 3;  // Several forward passes per input.
    o.pooling = pooling;
    auto w = EmbeddingWorker::Create(*model_, o);
    ASSERT_TRUE(w.ok()) << w.status();
    const EmbeddingResult r = Embed(**w, {a, b});
    ASSERT_EQ(r.embeddings.size(), 2u);
    EXPECT_EQ(r.prompt_tokens, 10);
    // Batch invariance: the same rows whatever the chunking, so equal bits.
    EXPECT_EQ(r.embeddings[0], Reference(a, pooling)) << PoolingName(pooling);
    EXPECT_EQ(r.embeddings[1], Reference(b, pooling)) << PoolingName(pooling);
    double norm = 0;
    for (float v : r.embeddings[0]) norm += double{v} * v;
    EXPECT_NEAR(norm, 1.0, 1e-5);
  }
}

TEST_F(EmbeddingWorkerTest, BoundsAndQueue) {
  EmbeddingWorkerOptions o;
  o.max_tokens = 4;
  auto w = EmbeddingWorker::Create(*model_, o);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->max_tokens(), 4);
  std::promise<absl::Status> p;
  ASSERT_TRUE((*w)->Submit({{1, 2, 3, 4, 5}}, [&](absl::StatusOr<EmbeddingResult> r) { p.set_value(r.status()); }));
  EXPECT_TRUE(absl::IsInvalidArgument(p.get_future().get()));

  EmbeddingWorkerOptions none;
  none.max_queue = 0;
  auto full = EmbeddingWorker::Create(*model_, none);
  ASSERT_TRUE(full.ok());
  EXPECT_FALSE((*full)->Submit({{1}}, [](absl::StatusOr<EmbeddingResult>) { ADD_FAILURE() << "called"; }));
}

}  // namespace
}  // namespace swiftlet
