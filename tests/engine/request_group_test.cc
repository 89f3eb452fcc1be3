// Request groups (one comment into K languages): the shared part runs once,
// the branches fork from it, each choice's tokens are those of its own
// prompt run alone (a plain greedy loop over the model is the reference),
// and the group is admitted or refused whole.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "kv/kv_cache.h"
#include "kv/paged_kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"

namespace swiftlet {
namespace {

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

EngineConfig GroupConfig() {
  EngineConfig cfg;
  cfg.threads = 1;
  cfg.kv_memory_bytes = uint64_t{64} << 20;
  cfg.context = 256;
  cfg.scheduler.step_tokens = 64;
  cfg.scheduler.chunk_tokens = 16;
  cfg.slo_interactive = {600 * kNsPerSecond, 0};
  return cfg;
}

Request Group(std::vector<int32_t> shared, std::vector<std::vector<int32_t>> branches, int max_tokens,
              std::shared_ptr<Recorder> sink) {
  Request r;
  r.prompt = std::move(shared);
  r.options.n = static_cast<int32_t>(branches.size());
  r.branches = std::move(branches);
  r.options.sampling.temperature = 0;
  r.options.max_tokens = max_tokens;
  r.options.ignore_eos = true;
  r.sink = std::move(sink);
  return r;
}

TEST(RequestGroupTest, EachBranchGivesItsOwnPromptsTokensAndTheSharedPartRunsOnce) {
  EngineConfig cfg = GroupConfig();
  cfg.prefix_cache = false;  // Only the fork may save work.
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  ASSERT_TRUE(e.ok()) << e.status();
  Engine& engine = **e;
  engine.Calibrate();
  const int64_t blocks = engine.KvBlocksAvailableForTesting();
  // A translation's shape: 90 shared tokens (instruction and comment; not
  // block-aligned, so the fork shares a partial block), a short branch per
  // language (one of a single token).
  const std::vector<int32_t> shared = Prompt(7, 90);
  const std::vector<std::vector<int32_t>> branches = {Prompt(8, 6), Prompt(9, 5), {42}, Prompt(10, 7)};
  auto sink = std::make_shared<Recorder>();
  const uint64_t computed_before = engine.metrics().prompt_tokens_computed_total.Value();
  ASSERT_TRUE(engine.Submit(Group(shared, branches, 12, sink)).accepted());
  RunUntilIdle(engine);
  ASSERT_EQ(sink->completes, 1);
  for (size_t i = 0; i < branches.size(); ++i) {
    const int32_t choice = static_cast<int32_t>(i);
    EXPECT_EQ(sink->ids[choice], ReferenceGreedy(Concat(shared, branches[i]), 12)) << "branch " << i;
    EXPECT_EQ(sink->finish[choice], FinishReason::kLength);
    EXPECT_EQ(sink->finish_calls[choice], 1);
  }
  EXPECT_EQ(sink->usage.prompt_tokens, 90 + 6 + 5 + 1 + 7);
  EXPECT_EQ(sink->usage.completion_tokens, 4 * 12);
  // The shared part once, then each branch's own tokens.
  const uint64_t computed = engine.metrics().prompt_tokens_computed_total.Value() - computed_before;
  EXPECT_EQ(computed, uint64_t{90 + 6 + 5 + 1 + 7});
  EXPECT_LE(static_cast<double>(computed), 1.3 * (90 + 6));
  EXPECT_EQ(engine.KvBlocksAvailableForTesting(), blocks);
}

TEST(RequestGroupTest, GroupsBesideEachOtherAndUnderPreemptionKeepTheirTokens) {
  EngineConfig cfg = GroupConfig();
  const ModelConfig& mc = TinyModel().model->config();
  PagedKvShape shape{mc.n_layer, mc.kv_dim(), cfg.kv_block_tokens, 1, cfg.kv_type, 256};
  cfg.kv_memory_bytes = 24 * PagedKvCache::BlockBytes(shape);
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  ASSERT_TRUE(e.ok()) << e.status();
  Engine& engine = **e;
  engine.Calibrate();
  struct Case {
    std::vector<int32_t> shared;
    std::vector<std::vector<int32_t>> branches;
    std::shared_ptr<Recorder> sink = std::make_shared<Recorder>();
  };
  std::vector<Case> cases;
  for (uint32_t g = 0; g < 4; ++g) {
    Case c;
    c.shared = Prompt(100 + g, 40 + 3 * g);
    for (uint32_t k = 0; k < 3; ++k) c.branches.push_back(Prompt(200 + 10 * g + k, 2 + k));
    cases.push_back(std::move(c));
  }
  for (Case& c : cases) ASSERT_TRUE(engine.Submit(Group(c.shared, c.branches, 40, c.sink)).accepted());
  RunUntilIdle(engine);
  EXPECT_GE(engine.state().preemptions, 1) << "the cache was meant to run short";
  for (size_t g = 0; g < cases.size(); ++g) {
    ASSERT_EQ(cases[g].sink->completes, 1);
    for (size_t k = 0; k < cases[g].branches.size(); ++k) {
      EXPECT_EQ(cases[g].sink->ids[static_cast<int32_t>(k)],
                ReferenceGreedy(Concat(cases[g].shared, cases[g].branches[k]), 40))
          << "group " << g << " branch " << k;
    }
  }
  EXPECT_EQ(engine.KvBlocksAvailableForTesting(), 24);
}

TEST(RequestGroupTest, ValidatedAndAdmittedWhole) {
  EngineConfig cfg = GroupConfig();
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  ASSERT_TRUE(e.ok());
  Engine& engine = **e;
  engine.Calibrate();
  auto sink = std::make_shared<Recorder>();
  Request wrong_n = Group(Prompt(1, 10), {Prompt(2, 3), Prompt(3, 3)}, 4, sink);
  wrong_n.options.n = 3;
  EXPECT_EQ(engine.Submit(std::move(wrong_n)).refused, RefusalReason::kInvalid);
  EXPECT_EQ(engine.Submit(Group(Prompt(1, 10), {Prompt(2, 3), {}}, 4, sink)).refused, RefusalReason::kInvalid);
  SubmitResult r = engine.Submit(Group(Prompt(1, 10), {Prompt(2, 3), {1 << 30}}, 4, sink));
  EXPECT_EQ(r.refused, RefusalReason::kInvalid);
  EXPECT_NE(r.message.find("branches[1]"), std::string::npos) << r.message;
  // A branch that would not fit the context beside the shared part.
  r = engine.Submit(Group(Prompt(1, 200), {Prompt(2, 3), Prompt(3, 60)}, 4, sink));
  EXPECT_EQ(r.refused, RefusalReason::kInvalid);
  // The whole group's blocks counted: 16 branches of 200 tokens each past
  // a shared part do not fit a cache of a few blocks, though one would.
  EngineConfig small = GroupConfig();
  const ModelConfig& mc = TinyModel().model->config();
  PagedKvShape shape{mc.n_layer, mc.kv_dim(), small.kv_block_tokens, 1, small.kv_type, 256};
  small.kv_memory_bytes = 20 * PagedKvCache::BlockBytes(shape);
  auto e2 = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, small);
  ASSERT_TRUE(e2.ok());
  (*e2)->Calibrate();
  std::vector<std::vector<int32_t>> many(16, Prompt(5, 4));
  EXPECT_EQ((*e2)->Submit(Group(Prompt(1, 16), many, 100, sink)).refused, RefusalReason::kKvMemory);
  EXPECT_TRUE((*e2)->Submit(Group(Prompt(1, 16), {Prompt(5, 4)}, 100, sink)).accepted());
}

}  // namespace
}  // namespace swiftlet
