// The continuous-batching engine against a plain greedy loop over the model
// (an independent path: contiguous KV cache, no scheduler), and its
// bookkeeping under random arrivals, cancellations and preemptions.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <map>
#include <random>

#include <unistd.h>

#include "engine/step_gate.h"
#include "engine_test_util.h"
#include "gguf/gguf_file.h"
#include "kv/kv_cache.h"
#include "kv/paged_kv_cache.h"
#include "model/forward_context.h"
#include "model/model.h"
#include "model/random_model.h"
#include "text/tokenizer.h"

namespace swiftlet {
namespace {

EngineConfig SmallConfig() {
  EngineConfig cfg;
  cfg.threads = 1;
  cfg.kv_memory_bytes = uint64_t{64} << 20;
  cfg.context = 256;
  cfg.scheduler.step_tokens = 64;
  cfg.scheduler.chunk_tokens = 16;
  return cfg;
}

std::unique_ptr<Engine> MakeEngine(const EngineConfig& cfg) {
  auto e = Engine::Create(*TinyModel().model, *TinyModel().tokenizer, cfg);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

Request Greedy(std::vector<int32_t> prompt, int max_tokens, std::shared_ptr<Recorder> sink) {
  Request r;
  r.prompt = std::move(prompt);
  r.options.sampling.temperature = 0;
  r.options.max_tokens = max_tokens;
  r.options.ignore_eos = true;
  r.sink = std::move(sink);
  return r;
}

TEST(EngineTest, GreedyMatchesThePlainLoopAloneAndAmongOthers) {
  const std::vector<int32_t> prompt = Prompt(1, 37);
  const std::vector<int32_t> want = ReferenceGreedy(prompt, 12);
  auto e = MakeEngine(SmallConfig());
  auto alone = std::make_shared<Recorder>();
  ASSERT_TRUE(e->Submit(Greedy(prompt, 12, alone)).accepted());
  RunUntilIdle(*e);
  EXPECT_EQ(alone->ids[0], want);
  EXPECT_EQ(alone->finish[0], FinishReason::kLength);
  EXPECT_EQ(alone->completes, 1);

  // The same request arriving mid-way among others of other lengths.
  std::vector<std::shared_ptr<Recorder>> others;
  for (int i = 0; i < 4; ++i) {
    others.push_back(std::make_shared<Recorder>());
    ASSERT_TRUE(e->Submit(Greedy(Prompt(10 + i, 5 + 13 * i), 9 + i, others.back())).accepted());
    e->StepForTesting();
  }
  auto among = std::make_shared<Recorder>();
  ASSERT_TRUE(e->Submit(Greedy(prompt, 12, among)).accepted());
  RunUntilIdle(*e);
  EXPECT_EQ(among->ids[0], want);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(others[i]->ids[0], ReferenceGreedy(Prompt(10 + i, 5 + 13 * i), 9 + i));
  EXPECT_EQ(e->KvBlocksAvailableForTesting(), e->KvBlocksTotalForTesting());
}

// Greedy requests take their tokens as the argmax of their rows
// (Batch::argmax_rows); those asking for logprobs read the logits. In the
// same steps, each gets the plain loop's tokens from its own row.
TEST(EngineTest, ArgMaxRowsAndLogitRowsInOneStepEachGetTheirOwnTokens) {
  auto e = MakeEngine(SmallConfig());
  std::vector<std::shared_ptr<Recorder>> sinks;
  for (int i = 0; i < 6; ++i) {
    sinks.push_back(std::make_shared<Recorder>());
    Request r = Greedy(Prompt(30 + i, 4 + 7 * i), 10, sinks.back());
    if (i % 2 == 1) r.options.top_logprobs = 0;  // The logits come back.
    if (i == 4) r.options.sampling.penalty_last_n = 0;  // No penalty either way.
    if (i == 4) r.options.sampling.repetition_penalty = 1.3f;
    ASSERT_TRUE(e->Submit(std::move(r)).accepted());
  }
  RunUntilIdle(*e);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(sinks[i]->ids[0], ReferenceGreedy(Prompt(30 + i, 4 + 7 * i), 10)) << "request " << i;
    EXPECT_EQ(sinks[i]->events.front().chosen.size(), i % 2 == 1 ? 1u : 0u) << "request " << i;
  }
  EXPECT_EQ(e->KvBlocksAvailableForTesting(), e->KvBlocksTotalForTesting());
}

// A model whose final norm weights are NaN gives NaN logits: no token can
// be taken, sampled (the sampler) or greedy (the backend's argmax), and each
// request fails with an error, its blocks back; the engine goes on.
TEST(EngineTest, NaNLogitsFailEachRequestNotTheEngine) {
  RandomModelSpec spec = *RandomModelPreset("tiny");
  spec.n_embd = 64;
  spec.n_layer = 1;
  spec.n_head = 2;
  spec.n_head_kv = 1;
  spec.n_ff = 128;
  spec.n_ctx = 256;
  const std::string path = ::testing::TempDir() + "/engine_nan." + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(WriteRandomModel(spec, path, 1).ok());
  {
    auto file = GgufFile::Open(path);
    ASSERT_TRUE(file.ok()) << file.status();
    const GgufTensor* norm = (*file)->FindTensor("output_norm.weight");
    ASSERT_NE(norm, nullptr);
    ASSERT_EQ(norm->type, TensorType::kF32);
    const uint64_t at = (*file)->data_offset() + norm->offset;
    const std::vector<float> nan(norm->n_elements, std::numeric_limits<float>::quiet_NaN());
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(nan.data()), static_cast<std::streamsize>(nan.size() * sizeof(float)));
    ASSERT_TRUE(f.good());
  }
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status();
  auto tokenizer = Tokenizer::FromGguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  auto e = Engine::Create(**model, **tokenizer, SmallConfig());
  ASSERT_TRUE(e.ok()) << e.status();
  for (int round = 0; round < 2; ++round) {
    auto sampled = std::make_shared<Recorder>();
    Request r = Greedy(Prompt(5, 6), 4, sampled);
    r.options.sampling.temperature = 0.8f;
    if (round == 1) r.options.sampling.top_k = 5;
    ASSERT_TRUE((*e)->Submit(std::move(r)).accepted());
    auto greedy = std::make_shared<Recorder>();
    ASSERT_TRUE((*e)->Submit(Greedy(Prompt(6, 6), 4, greedy)).accepted());
    RunUntilIdle(**e);
    EXPECT_EQ(sampled->finish[0], FinishReason::kError) << "round " << round;
    EXPECT_TRUE(sampled->ids[0].empty()) << "round " << round;
    EXPECT_EQ(sampled->completes, 1);
    EXPECT_EQ(greedy->finish[0], FinishReason::kError) << "round " << round;
    EXPECT_TRUE(greedy->ids[0].empty()) << "round " << round;
    EXPECT_EQ(greedy->completes, 1);
  }
  EXPECT_EQ((*e)->KvBlocksAvailableForTesting(), (*e)->KvBlocksTotalForTesting());
}

TEST(EngineTest, SeededSamplingGivesTheSameTokensInAnyBatch) {
  auto run = [](bool crowded) {
    auto e = MakeEngine(SmallConfig());
    std::vector<std::shared_ptr<Recorder>> noise;
    if (crowded) {
      for (int i = 0; i < 3; ++i) {
        noise.push_back(std::make_shared<Recorder>());
        Request r = Greedy(Prompt(50 + i, 20), 15, noise.back());
        r.options.sampling.temperature = 1.0f;
        r.options.sampling.seed = 7 + i;
        EXPECT_TRUE(e->Submit(std::move(r)).accepted());
      }
      e->StepForTesting();
    }
    auto sink = std::make_shared<Recorder>();
    Request r = Greedy(Prompt(2, 30), 20, sink);
    r.options.sampling.temperature = 0.9f;
    r.options.sampling.top_k = 40;
    r.options.sampling.seed = 1234;
    r.options.n = 2;
    EXPECT_TRUE(e->Submit(std::move(r)).accepted());
    RunUntilIdle(*e);
    EXPECT_EQ(sink->completes, 1);
    EXPECT_EQ(sink->usage.completion_tokens, 40);
    return std::make_pair(sink->ids[0], sink->ids[1]);
  };
  const auto alone = run(false);
  const auto crowded = run(true);
  EXPECT_EQ(alone.first, crowded.first);
  EXPECT_EQ(alone.second, crowded.second);
  EXPECT_NE(alone.first, alone.second) << "choices must draw with different seeds";
}

// The sampled rows of a step are drawn on the host's pool, several at once,
// each in place where no other choice reads its row: each choice still
// gets the tokens its own sampler draws from its own row, as a plain loop
// over the model alone gives them. On an engine's own pool and on a step
// gate's shared one, with argmax rows and requests of several choices (one
// row for all at their first token) in the same steps.
TEST(EngineTest, RowsDrawnInParallelEachFollowTheirOwnSampler) {
  struct Case {
    SamplingParams params;
    int32_t n = 1;
    std::vector<int32_t> stop_ids;  // Held back until min_tokens: all of it.
    int32_t top_logprobs = -1;
  };
  auto params = [](float temperature, int32_t top_k, float top_p, float min_p, uint64_t seed) {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.seed = seed;
    return p;
  };
  std::vector<Case> cases = {
      {params(0.7f, 0, 1.0f, 0.0f, 11), 1, {}, -1},      {params(1.0f, 20, 1.0f, 0.0f, 12), 1, {}, 3},
      {params(0.9f, 0, 0.8f, 0.0f, 13), 1, {}, -1},      {params(1.2f, 0, 1.0f, 0.1f, 14), 1, {}, -1},
      {params(0.6f, 40, 0.9f, 0.0f, 15), 2, {}, -1},     {params(1.0f, 0, 1.0f, 0.0f, 16), 1, {7, 42, 300}, 0},
      {params(0.0f, 0, 1.0f, 0.0f, 0), 1, {}, -1},       {params(0.8f, 0, 1.0f, 0.0f, 17), 1, {}, -1},
      {params(0.0f, 0, 1.0f, 0.0f, 0), 1, {}, 5},  // Greedy with logprobs: drawn, not an argmax row.
      // Choices that share their prompt's row, drawn by passes that rewrite
      // a row in place: each must draw from the row as the forward left it.
      {params(1.0f, 0, 1.0f, 0.0f, 18), 3, {}, -1},      {params(0.9f, 0, 0.95f, 0.05f, 19), 2, {}, -1},
  };
  cases[7].params.repetition_penalty = 1.3f;
  cases[7].params.frequency_penalty = 0.5f;
  cases[7].params.penalty_last_n = -1;
  constexpr int kTokens = 12;
  for (const bool shared : {false, true}) {
    EngineConfig cfg = SmallConfig();
    cfg.threads = 4;
    if (shared) cfg.step_gate = std::make_shared<StepGate>(3);
    auto e = MakeEngine(cfg);
    std::vector<std::shared_ptr<Recorder>> sinks;
    for (size_t i = 0; i < cases.size(); ++i) {
      sinks.push_back(std::make_shared<Recorder>());
      Request r = Greedy(Prompt(60 + static_cast<uint32_t>(i), 3 + 5 * i), kTokens, sinks.back());
      r.options.sampling = cases[i].params;
      r.options.n = cases[i].n;
      r.options.stop_token_ids = cases[i].stop_ids;
      r.options.top_logprobs = cases[i].top_logprobs;
      if (!cases[i].stop_ids.empty()) r.options.min_tokens = kTokens;
      ASSERT_TRUE(e->Submit(std::move(r)).accepted());
    }
    RunUntilIdle(*e);
    for (size_t i = 0; i < cases.size(); ++i) {
      const std::vector<int32_t> prompt = Prompt(60 + static_cast<uint32_t>(i), 3 + 5 * i);
      for (int32_t choice = 0; choice < cases[i].n; ++choice) {
        SamplingParams p = cases[i].params;
        p.seed += static_cast<uint64_t>(choice);  // The engine seeds choice k with seed + k.
        std::vector<TokenLogprobs> want_logprobs;
        const std::string where =
            "request " + std::to_string(i) + " choice " + std::to_string(choice) + (shared ? " on the shared pool" : " on its own pool");
        EXPECT_EQ(sinks[i]->ids[choice], ReferenceSampled(prompt, kTokens, p, cases[i].stop_ids,
                                                          std::max(0, cases[i].top_logprobs), &want_logprobs))
            << where;
        // The logprobs of each token, as ComputeLogprobs gives them on the row it was drawn from.
        std::vector<TokenLogprob> chosen;
        std::vector<std::vector<TokenLogprob>> top;
        for (const TokenEvent& ev : sinks[i]->events) {
          if (ev.choice != choice) continue;
          chosen.insert(chosen.end(), ev.chosen.begin(), ev.chosen.end());
          top.insert(top.end(), ev.top.begin(), ev.top.end());
        }
        if (cases[i].top_logprobs < 0) {
          EXPECT_TRUE(chosen.empty() && top.empty()) << where;
          continue;
        }
        ASSERT_EQ(chosen.size(), want_logprobs.size()) << where;
        ASSERT_EQ(top.size(), want_logprobs.size()) << where;
        for (size_t t = 0; t < chosen.size(); ++t) {
          EXPECT_EQ(chosen[t].id, want_logprobs[t].chosen.id) << where << " token " << t;
          EXPECT_EQ(chosen[t].logprob, want_logprobs[t].chosen.logprob) << where << " token " << t;
          ASSERT_EQ(top[t].size(), want_logprobs[t].top.size()) << where << " token " << t;
          for (size_t k = 0; k < top[t].size(); ++k) {
            EXPECT_EQ(top[t][k].id, want_logprobs[t].top[k].id) << where << " token " << t;
            EXPECT_EQ(top[t][k].logprob, want_logprobs[t].top[k].logprob) << where << " token " << t;
          }
        }
      }
    }
    EXPECT_EQ(e->KvBlocksAvailableForTesting(), e->KvBlocksTotalForTesting());
  }
}

TEST(EngineTest, PrefixCacheComputesOnlyTheRestAndGivesTheSameTokens) {
  auto e = MakeEngine(SmallConfig());
  const std::vector<int32_t> prompt = Prompt(3, 50);
  auto first = std::make_shared<Recorder>();
  ASSERT_TRUE(e->Submit(Greedy(prompt, 6, first)).accepted());
  RunUntilIdle(*e);
  const int64_t before = e->state().computed_tokens;
  auto second = std::make_shared<Recorder>();
  ASSERT_TRUE(e->Submit(Greedy(prompt, 6, second)).accepted());
  RunUntilIdle(*e);
  // 49 tokens may match (one is always computed): three full blocks of 16.
  const int64_t computed = e->state().computed_tokens - before;
  EXPECT_EQ(computed, 50 - 48 + 5) << "prompt remainder plus five decode steps";
  EXPECT_EQ(second->usage.cached_prompt_tokens, 48);
  EXPECT_EQ(second->ids[0], first->ids[0]);
  EXPECT_EQ(first->ids[0], ReferenceGreedy(prompt, 6));
  EXPECT_GE(e->state().prefix_hits_tokens, 48);
  const EngineMetrics& m = e->metrics();
  EXPECT_EQ(m.prefix_cache_hits_tokens.Value(), 48u);
  EXPECT_EQ(m.prefix_cache_queries_tokens.Value(), 49u + 49u);
  EXPECT_EQ(m.generation_tokens_total.Value(), 12u);
  EXPECT_EQ(m.prompt_tokens_total.Value(), 100u);
  EXPECT_EQ(m.time_to_first_token_seconds.Snapshot().count, 2u);
  EXPECT_EQ(m.inter_token_latency_seconds.Snapshot().count, 10u);
  EXPECT_EQ(m.requests_finished.Value(FinishReason::kLength), 2u);
  // The TTFT estimate expects a new prompt to compute the recent share of
  // its tokens the cache did not hold: the cold one computed all 49 looked
  // up, the warm one 1 of 49; moving average 1 + 0.1 * (1/49 - 1).
  const double share = 1.0 + 0.1 * (1.0 / 49.0 - 1.0);
  EXPECT_NEAR(e->state().prefill_share, share, 1e-9);
  ASSERT_TRUE(e->Submit(Greedy(Prompt(4, 40), 2, std::make_shared<Recorder>())).accepted());
  EXPECT_NEAR(e->state().expected_interactive_prefill_tokens, share * 40, 1e-6);
  EXPECT_EQ(e->state().queued_interactive_prompt_tokens, 40) << "the backlog limit still counts every token";
  RunUntilIdle(*e);
}

TEST(EngineTest, StopStringIsNeverEmittedAndEndsTheChoice) {
  auto e = MakeEngine(SmallConfig());
  const std::vector<int32_t> prompt = Prompt(4, 20);
  auto free_run = std::make_shared<Recorder>();
  ASSERT_TRUE(e->Submit(Greedy(prompt, 24, free_run)).accepted());
  RunUntilIdle(*e);
  const std::string full = free_run->text[0];
  ASSERT_GE(full.size(), 12u);
  const std::string stop = full.substr(full.size() / 2, 3);
  const std::string want = full.substr(0, full.find(stop));
  auto stopped = std::make_shared<Recorder>();
  Request r = Greedy(prompt, 24, stopped);
  r.options.stop = {stop};
  ASSERT_TRUE(e->Submit(std::move(r)).accepted());
  RunUntilIdle(*e);
  EXPECT_EQ(stopped->text[0], want);
  EXPECT_EQ(stopped->finish[0], FinishReason::kStop);
}

TEST(EngineTest, MinTokensHoldsBackStopIdsUntilReached) {
  auto e = MakeEngine(SmallConfig());
  const std::vector<int32_t> prompt = Prompt(6, 12);
  const std::vector<int32_t> free_ids = ReferenceGreedy(prompt, 1);
  // The greedy first token is a stop id: without min_tokens the choice ends
  // at once with no output.
  auto early = std::make_shared<Recorder>();
  Request a = Greedy(prompt, 8, early);
  a.options.stop_token_ids = {free_ids[0]};
  ASSERT_TRUE(e->Submit(std::move(a)).accepted());
  RunUntilIdle(*e);
  EXPECT_TRUE(early->ids[0].empty());
  EXPECT_EQ(early->finish[0], FinishReason::kStop);
  // With min_tokens 3 the first three tokens cannot be that id.
  auto held = std::make_shared<Recorder>();
  Request b = Greedy(prompt, 8, held);
  b.options.stop_token_ids = {free_ids[0]};
  b.options.min_tokens = 3;
  ASSERT_TRUE(e->Submit(std::move(b)).accepted());
  RunUntilIdle(*e);
  ASSERT_GE(held->ids[0].size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_NE(held->ids[0][i], free_ids[0]) << i;
  // min_tokens over max_tokens is refused.
  Request c = Greedy(prompt, 2, std::make_shared<Recorder>());
  c.options.min_tokens = 3;
  EXPECT_EQ(e->Submit(std::move(c)).refused, RefusalReason::kInvalid);
}

TEST(EngineTest, RefusesAtSubmitWithAReason) {
  EngineConfig cfg = SmallConfig();
  cfg.max_queue = 2;
  auto e = MakeEngine(cfg);
  auto sink = std::make_shared<Recorder>();
  Request bad = Greedy({}, 4, sink);
  EXPECT_EQ(e->Submit(bad).refused, RefusalReason::kInvalid);
  bad = Greedy({1, 2, 100000}, 4, sink);
  EXPECT_EQ(e->Submit(bad).refused, RefusalReason::kInvalid);
  bad = Greedy({1, 2}, 4, sink);
  bad.options.n = 0;
  EXPECT_EQ(e->Submit(bad).refused, RefusalReason::kInvalid);
  EXPECT_TRUE(e->Submit(Greedy({1, 2}, 4, sink)).accepted());
  EXPECT_TRUE(e->Submit(Greedy({1, 2}, 4, sink)).accepted());
  const SubmitResult full = e->Submit(Greedy({1, 2}, 4, sink));
  EXPECT_EQ(full.refused, RefusalReason::kQueueFull);
  EXPECT_GE(full.retry_after_ms, 1);
  EXPECT_EQ(sink->events.size(), 0u) << "a refused request hears nothing";
  EXPECT_EQ(e->metrics().refusals.Value(RefusalReason::kInvalid), 3u);
  EXPECT_EQ(e->metrics().refusals.Value(RefusalReason::kQueueFull), 1u);

  EngineConfig small = SmallConfig();
  small.kv_memory_bytes = 16 * PagedKvCache::BlockBytes({2, 64, 16, 1, TensorType::kF16, 8});
  auto tiny = MakeEngine(small);
  const SubmitResult kv = tiny->Submit(Greedy(Prompt(5, 100), 200, sink));
  EXPECT_EQ(kv.refused, RefusalReason::kKvMemory) << kv.message;
}

TEST(EngineTest, RefusesWhatCannotMeetItsTtftTarget) {
  auto e = MakeEngine(SmallConfig());
  e->Start();  // calibrates the cost model
  auto sink = std::make_shared<Recorder>();
  Request r = Greedy(Prompt(6, 100), 4, sink);
  r.options.targets.ttft_ns = 1;  // 1 ns: no forward pass is that fast
  const SubmitResult s = e->Submit(std::move(r));
  EXPECT_EQ(s.refused, RefusalReason::kTtftTarget) << s.message;
  EXPECT_GE(s.retry_after_ms, 1);
  e->Stop();
}

TEST(EngineTest, CancelFreesBlocksInEveryPhase) {
  auto e = MakeEngine(SmallConfig());
  for (int phase = 0; phase < 3; ++phase) {
    auto sink = std::make_shared<Recorder>();
    const SubmitResult s = e->Submit(Greedy(Prompt(7, 60), 30, sink));
    ASSERT_TRUE(s.accepted());
    // 0: still queued; 1: prefilling (60 tokens in chunks of 16); 2: decoding.
    for (int i = 0; i < (phase == 0 ? 0 : phase == 1 ? 2 : 6); ++i) e->StepForTesting();
    e->Cancel(s.id);
    RunUntilIdle(*e);
    EXPECT_EQ(sink->finish[0], FinishReason::kCancelled) << "phase " << phase;
    EXPECT_EQ(sink->completes, 1);
    EXPECT_EQ(e->KvBlocksAvailableForTesting(), e->KvBlocksTotalForTesting());
  }
}

TEST(EngineTest, LogprobsAreNormalisedAndTheGreedyTokenLeads) {
  auto e = MakeEngine(SmallConfig());
  auto sink = std::make_shared<Recorder>();
  Request r = Greedy(Prompt(8, 10), 5, sink);
  r.options.top_logprobs = 3;
  ASSERT_TRUE(e->Submit(std::move(r)).accepted());
  RunUntilIdle(*e);
  int checked = 0;
  for (const TokenEvent& ev : sink->events) {
    if (ev.ids.empty()) continue;
    ASSERT_EQ(ev.chosen.size(), 1u);
    ASSERT_EQ(ev.top.size(), 1u);
    ASSERT_EQ(ev.top[0].size(), 3u);
    EXPECT_LE(ev.chosen[0].logprob, 0.0f);
    EXPECT_EQ(ev.top[0][0].id, ev.ids[0]);
    EXPECT_GE(ev.top[0][0].logprob, ev.top[0][1].logprob);
    EXPECT_GE(ev.top[0][1].logprob, ev.top[0][2].logprob);
    ++checked;
  }
  EXPECT_EQ(checked, 5);
}

// Random arrivals, lengths, choices and cancellations in a cache small
// enough to force preemptions: everything finishes exactly once, greedy
// outputs still match the plain loop, and every block comes back.
TEST(EngineTest, RandomTrafficEndsWithEveryBlockFreeAndNothingStuck) {
  EngineConfig cfg = SmallConfig();
  cfg.kv_memory_bytes = 40 * PagedKvCache::BlockBytes({2, 64, 16, 1, TensorType::kF16, 8});
  cfg.max_running = 8;
  auto e = MakeEngine(cfg);
  std::mt19937 rng(11);
  struct Sent {
    std::shared_ptr<Recorder> sink;
    std::vector<int32_t> prompt;
    int max_tokens;
    int n;
    bool cancelled;
  };
  std::vector<Sent> sent;
  std::vector<uint64_t> ids;
  for (int step = 0; step < 400; ++step) {
    if (step < 300 && rng() % 3 == 0) {
      Sent s{std::make_shared<Recorder>(), Prompt(100 + step, 1 + rng() % 90), 1 + static_cast<int>(rng() % 40),
             rng() % 4 == 0 ? 2 : 1, false};
      Request r = Greedy(s.prompt, s.max_tokens, s.sink);
      r.options.n = s.n;
      if (rng() % 3 == 0) r.options.latency_class = LatencyClass::kBatch;
      const SubmitResult res = e->Submit(std::move(r));
      ASSERT_TRUE(res.accepted()) << res.message;
      sent.push_back(s);
      ids.push_back(res.id);
    }
    if (!ids.empty() && rng() % 17 == 0) {
      const size_t victim = rng() % ids.size();
      sent[victim].cancelled = true;
      e->Cancel(ids[victim]);
    }
    e->StepForTesting();
  }
  RunUntilIdle(*e, 20000);
  EXPECT_GT(e->state().preemptions, 0) << "the cache was meant to run out";
  for (size_t i = 0; i < sent.size(); ++i) {
    const Sent& s = sent[i];
    ASSERT_EQ(s.sink->completes, 1) << "request " << i;
    for (int c = 0; c < s.n; ++c) {
      if (s.sink->finish_calls.count(c) == 0) {
        EXPECT_TRUE(s.cancelled) << "request " << i << " choice " << c << " never finished";
        continue;
      }
      EXPECT_EQ(s.sink->finish_calls[c], 1);
      if (s.sink->finish[c] == FinishReason::kLength) {
        // Greedy choices all equal the plain loop, preempted or not.
        EXPECT_EQ(s.sink->ids[c], ReferenceGreedy(s.prompt, s.max_tokens)) << "request " << i;
      } else {
        EXPECT_EQ(s.sink->finish[c], FinishReason::kCancelled) << "request " << i;
      }
    }
  }
  EXPECT_EQ(e->KvBlocksAvailableForTesting(), e->KvBlocksTotalForTesting());
  EXPECT_EQ(e->state().running, 0);
  EXPECT_EQ(e->state().waiting, 0);
}

}  // namespace
}  // namespace swiftlet
