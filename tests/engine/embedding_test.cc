// Embeddings: pooling arithmetic, and embedding requests run by the engine
// in its own batches (chunked, beside generation, preempted) against one
// plain forward pass over the whole input.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine/pooling.h"
#include "engine_test_util.h"
#include "kv/kv_cache.h"
#include "kv/paged_kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "model/model_config.h"

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

// The pooled final hidden states of one forward pass over the whole input,
// on a contiguous cache (no engine, no paging, no chunks).
std::vector<float> Reference(const std::vector<int32_t>& input, Pooling pooling) {
  const Model& m = *TinyModel().model;
  const ModelConfig& c = m.config();
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 512, TensorType::kF16}, uint64_t{1} << 30);
  ForwardContext ctx(1);
  ForwardOutput out;
  Batch b;
  for (size_t i = 0; i < input.size(); ++i) b.Add(input[i], static_cast<int32_t>(i), 0, false, true);
  EXPECT_TRUE(m.Forward(b, *cache, ctx, out).ok());
  return PoolAndNormalize(out.hidden.data(), static_cast<int64_t>(input.size()), c.n_embd, pooling);
}

EngineConfig EmbeddingConfig() {
  EngineConfig cfg;
  cfg.threads = 1;
  cfg.kv_memory_bytes = uint64_t{64} << 20;
  cfg.context = 256;
  cfg.scheduler.step_tokens = 24;
  cfg.scheduler.chunk_tokens = 5;  // Several chunks per input.
  cfg.slo_interactive = {600 * kNsPerSecond, 0};
  cfg.slo_embedding = {600 * kNsPerSecond, 0};
  return cfg;
}

Request Embed(std::vector<int32_t> input, Pooling pooling, std::shared_ptr<Recorder> sink) {
  Request r;
  r.prompt = std::move(input);
  r.options.embedding = true;
  r.options.pooling = pooling;
  r.options.latency_class = LatencyClass::kEmbedding;
  r.sink = std::move(sink);
  return r;
}

Request Generate(std::vector<int32_t> prompt, int max_tokens, std::shared_ptr<Recorder> sink) {
  Request r;
  r.prompt = std::move(prompt);
  r.options.sampling.temperature = 0;
  r.options.max_tokens = max_tokens;
  r.options.ignore_eos = true;
  r.sink = std::move(sink);
  return r;
}

TEST(EngineEmbeddingTest, ChunkedAmidGenerationGivesTheOneForwardPassResult) {
  for (Pooling pooling : {Pooling::kMean, Pooling::kFirst, Pooling::kLast}) {
    auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, EmbeddingConfig());
    ASSERT_TRUE(e.ok()) << e.status();
    Engine& engine = **e;
    engine.Calibrate();
    const int64_t total = engine.KvBlocksAvailableForTesting();
    std::vector<std::shared_ptr<Recorder>> gen, emb;
    std::vector<std::vector<int32_t>> inputs;
    for (uint32_t i = 0; i < 3; ++i) {
      gen.push_back(std::make_shared<Recorder>());
      ASSERT_TRUE(engine.Submit(Generate(Prompt(10 + i, 9), 6, gen.back())).accepted());
      inputs.push_back(Prompt(20 + i, 7 + 6 * i));
      emb.push_back(std::make_shared<Recorder>());
      ASSERT_TRUE(engine.Submit(Embed(inputs.back(), pooling, emb.back())).accepted());
    }
    RunUntilIdle(engine);
    // The same input again, once the first has committed its blocks: it
    // must not take rows from the prefix cache (it would pool nothing for
    // them).
    inputs.push_back(inputs.back());
    emb.push_back(std::make_shared<Recorder>());
    ASSERT_TRUE(engine.Submit(Embed(inputs.back(), pooling, emb.back())).accepted());
    RunUntilIdle(engine);
    for (size_t i = 0; i < emb.size(); ++i) {
      const Recorder& r = *emb[i];
      ASSERT_EQ(r.embeddings, 1) << PoolingName(pooling) << " input " << i;
      EXPECT_TRUE(r.embedding_before_finish);
      EXPECT_EQ(r.finish.at(0), FinishReason::kStop);
      EXPECT_EQ(r.completes, 1);
      EXPECT_TRUE(r.ids.empty());
      EXPECT_EQ(r.usage.prompt_tokens, static_cast<int64_t>(inputs[i].size()));
      EXPECT_EQ(r.usage.completion_tokens, 0);
      EXPECT_EQ(r.usage.cached_prompt_tokens, 0);
      EXPECT_GE(r.timings.ttft_ns, 0);
      // Batch invariance: whatever the chunks and neighbours, equal bits.
      EXPECT_EQ(r.embedding, Reference(inputs[i], pooling)) << PoolingName(pooling) << " input " << i;
      double norm = 0;
      for (float v : r.embedding) norm += double{v} * v;
      EXPECT_NEAR(norm, 1.0, 1e-5);
    }
    for (const auto& g : gen) {
      EXPECT_EQ(g->completes, 1);
      EXPECT_EQ(g->ids[0].size(), 6u);
    }
    EXPECT_EQ(engine.KvBlocksAvailableForTesting(), total);
  }
}

// Interactive decodes take the blocks of an embedding mid-prompt (a lower
// class); it is recomputed from its first row and still pools every row
// once.
TEST(EngineEmbeddingTest, PreemptedMidPromptIsRecomputedWhole) {
  EngineConfig cfg = EmbeddingConfig();
  cfg.scheduler.step_tokens = 48;
  cfg.scheduler.chunk_tokens = 16;
  const ModelConfig& mc = TinyModel().model->config();
  PagedKvShape shape{mc.n_layer, mc.kv_dim(), cfg.kv_block_tokens, 1, cfg.kv_type, 256};
  cfg.kv_memory_bytes = 10 * PagedKvCache::BlockBytes(shape);
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  ASSERT_TRUE(e.ok()) << e.status();
  Engine& engine = **e;
  engine.Calibrate();
  ASSERT_EQ(engine.KvBlocksTotalForTesting(), 10);
  // Two 47-token prompts (3 blocks each) that decode into their 4th and 5th
  // blocks, and an 80-token input (5 blocks) prefilled beside them.
  auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>(), emb = std::make_shared<Recorder>();
  ASSERT_TRUE(engine.Submit(Generate(Prompt(31, 47), 20, a)).accepted());
  ASSERT_TRUE(engine.Submit(Generate(Prompt(32, 47), 20, b)).accepted());
  const std::vector<int32_t> input = Prompt(33, 80);
  ASSERT_TRUE(engine.Submit(Embed(input, Pooling::kMean, emb)).accepted());
  RunUntilIdle(engine);
  EXPECT_GE(engine.state().preemptions, 1);
  ASSERT_EQ(emb->embeddings, 1);
  EXPECT_EQ(emb->embedding, Reference(input, Pooling::kMean));
  EXPECT_EQ(a->ids[0].size(), 20u);
  EXPECT_EQ(b->ids[0].size(), 20u);
  EXPECT_EQ(engine.KvBlocksAvailableForTesting(), 10);
}

TEST(EngineEmbeddingTest, ValidatedAndSizedByTheirInputAlone) {
  EngineConfig cfg = EmbeddingConfig();
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  ASSERT_TRUE(e.ok());
  Engine& engine = **e;
  engine.Calibrate();
  auto sink = std::make_shared<Recorder>();
  // The whole context is the input's (no room for output needed).
  EXPECT_TRUE(engine.Submit(Embed(Prompt(1, 256), Pooling::kMean, sink)).accepted());
  SubmitResult r = engine.Submit(Embed(Prompt(1, 257), Pooling::kMean, sink));
  EXPECT_EQ(r.refused, RefusalReason::kInvalid);
  EXPECT_NE(r.message.find("input"), std::string::npos) << r.message;
  Request wrong_class = Embed(Prompt(1, 8), Pooling::kMean, sink);
  wrong_class.options.latency_class = LatencyClass::kInteractive;
  EXPECT_EQ(engine.Submit(std::move(wrong_class)).refused, RefusalReason::kInvalid);
  Request generation_as_embedding = Generate(Prompt(1, 8), 4, sink);
  generation_as_embedding.options.latency_class = LatencyClass::kEmbedding;
  EXPECT_EQ(engine.Submit(std::move(generation_as_embedding)).refused, RefusalReason::kInvalid);
  Request two = Embed(Prompt(1, 8), Pooling::kMean, sink);
  two.options.n = 2;
  EXPECT_EQ(engine.Submit(std::move(two)).refused, RefusalReason::kInvalid);
}

// Embeddings are admitted like generation: against their own TTFT target
// (the time to the embedding), behind the work queued ahead.
TEST(EngineEmbeddingTest, RefusedWhenTheQueueAheadMissesTheirTarget) {
  EngineConfig cfg = EmbeddingConfig();
  cfg.slo_embedding = {50 * kNsPerMs, 0};
  FakeClock clock(kNsPerSecond);
  cfg.clock = &clock;
  cfg.forward_hook_for_testing = [&clock](int64_t tokens) { clock.Advance(2 * kNsPerMs + 100'000 * tokens); };
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  ASSERT_TRUE(e.ok());
  Engine& engine = **e;
  engine.Calibrate();
  auto sink = std::make_shared<Recorder>();
  // Alone: 20 tokens at 5 per step are 4 steps of ~2.5 ms.
  EXPECT_TRUE(engine.Submit(Embed(Prompt(3, 20), Pooling::kMean, sink)).accepted());
  // Interactive prompts go first: 40 x 200 tokens at 24 per step are far
  // more than 50 ms.
  for (uint32_t i = 0; i < 40; ++i) {
    ASSERT_TRUE(engine.Submit(Generate(Prompt(100 + i, 200), 4, std::make_shared<Recorder>())).accepted());
  }
  engine.StepForTesting();
  const SubmitResult r = engine.Submit(Embed(Prompt(4, 20), Pooling::kMean, sink));
  EXPECT_EQ(r.refused, RefusalReason::kTtftTarget) << r.message;
  EXPECT_GT(r.retry_after_ms, 0);
}

}  // namespace
}  // namespace swiftlet
