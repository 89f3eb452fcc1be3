// The TTFT estimator against step counts worked out by hand.
#include "engine/ttft_estimator.h"

#include <gtest/gtest.h>

namespace swiftlet {
namespace {

EngineSnapshot Snapshot() {
  EngineSnapshot s;
  s.limits.step_tokens = 256;
  s.limits.chunk_tokens = 128;
  s.limits.max_running = 4;
  s.limits.kv_block_tokens = 16;
  s.limits.kv_blocks_available = 1000;
  s.cost.fixed_ns = 1'000'000;
  s.cost.per_token_ns = 100'000;
  return s;
}

QueuedRequest Waiting(int64_t prompt, int64_t decode, int32_t n = 1) {
  QueuedRequest q;
  q.prompt_tokens = prompt;
  q.prefill_tokens = prompt;
  q.decode_tokens = decode;
  q.n = n;
  q.ttft_deadline_ns = 1;
  return q;
}

TEST(TtftEstimatorTest, ALonePromptRunsAChunkPerStep) {
  const TtftEstimate e = EstimateTtft(Snapshot(), Waiting(1000, 1), int64_t{60} * 1'000'000'000);
  // 7 chunks of 128 and one of 104: 8 steps of 1 ms + 0.1 ms per token.
  EXPECT_EQ(e.steps, 8);
  EXPECT_EQ(e.ttft_ns, 8 * 1'000'000 + 1000 * 100'000);
}

TEST(TtftEstimatorTest, WaitsForAFreeSlot) {
  EngineSnapshot s = Snapshot();
  // Four running decoders hold every slot; each has 3 tokens to go.
  for (int i = 0; i < 4; ++i) {
    QueuedRequest q = Waiting(10, 3);
    q.started = q.prompt_done = true;
    q.prefill_tokens = 0;
    q.cached_tokens = 10;
    q.kv_blocks = 1;
    s.requests.push_back(q);
  }
  const TtftEstimate e = EstimateTtft(s, Waiting(10, 1), int64_t{60} * 1'000'000'000);
  EXPECT_TRUE(e.waited_for_slot);
  // Three decode steps of 4 tokens free the slots; then one step of 10.
  EXPECT_EQ(e.steps, 4);
  EXPECT_EQ(e.ttft_ns, 3 * (1'000'000 + 4 * 100'000) + 1'000'000 + 10 * 100'000);
}

TEST(TtftEstimatorTest, ChoicesTakeASlotEach) {
  EngineSnapshot s = Snapshot();
  // A waiting request of n = 4 starts beside the candidate (a prompt takes
  // one slot): both prompts run in the first step.
  s.requests.push_back(Waiting(10, 3, 4));
  EXPECT_EQ(EstimateTtft(s, Waiting(10, 1), int64_t{60} * 1'000'000'000).steps, 1);
  // Decoding, its four sequences hold all four slots for 3 more tokens.
  s.requests[0].started = s.requests[0].prompt_done = true;
  s.requests[0].prefill_tokens = 0;
  const TtftEstimate e = EstimateTtft(s, Waiting(10, 1), int64_t{60} * 1'000'000'000);
  EXPECT_TRUE(e.waited_for_slot);
  EXPECT_EQ(e.steps, 4);
  EXPECT_EQ(e.ttft_ns, 3 * (1'000'000 + 4 * 100'000) + 1'000'000 + 10 * 100'000);
}

TEST(TtftEstimatorTest, KvShortageWaitsForBlocksGivenBack) {
  EngineSnapshot s = Snapshot();
  s.limits.kv_blocks_available = 0;
  // 70 tokens in 5 blocks: its 5 more tokens need no new block.
  QueuedRequest running = Waiting(70, 5);
  running.started = running.prompt_done = true;
  running.prefill_tokens = 0;
  running.kv_blocks = 5;
  running.cached_tokens = 70;
  s.requests.push_back(running);
  const TtftEstimate e = EstimateTtft(s, Waiting(48, 1), int64_t{60} * 1'000'000'000);
  EXPECT_TRUE(e.waited_for_kv);
  EXPECT_FALSE(e.waited_for_slot);
  // Five decode steps, then the 48-token prompt in the blocks freed.
  EXPECT_EQ(e.steps, 6);
  // With nothing to give blocks back, it is never reached.
  s.requests.clear();
  EXPECT_EQ(EstimateTtft(s, Waiting(48, 1), int64_t{60} * 1'000'000'000).ttft_ns, TtftEstimate::kNever);
}

TEST(TtftEstimatorTest, InteractiveGoesBeforeQueuedBatch) {
  EngineSnapshot s = Snapshot();
  QueuedRequest batch = Waiting(1000, 1);
  batch.latency_class = LatencyClass::kBatch;
  s.requests.push_back(batch);
  QueuedRequest candidate = Waiting(100, 1);
  candidate.ttft_deadline_ns = 1'000'000'000;
  const TtftEstimate e = EstimateTtft(s, candidate, int64_t{60} * 1'000'000'000);
  EXPECT_EQ(e.steps, 1);
  // The batch request's first chunk fills the rest of that step's budget.
  EXPECT_EQ(e.ttft_ns, 1'000'000 + (100 + 128) * 100'000);
}

TEST(TtftEstimatorTest, StepBudgetFollowsTheTightestRunningTpot) {
  EngineSnapshot s = Snapshot();
  QueuedRequest running = Waiting(10, 100);
  running.started = running.prompt_done = true;
  running.prefill_tokens = 0;
  running.tpot_target_ns = 10'000'000;  // 8.5 ms of room: 1 decode + 74 prompt tokens.
  s.requests.push_back(running);
  const TtftEstimate e = EstimateTtft(s, Waiting(148, 1), int64_t{60} * 1'000'000'000);
  EXPECT_EQ(e.steps, 2);
}

TEST(TtftEstimatorTest, DecodesCostTheirKindsRowCost) {
  EngineSnapshot s = Snapshot();
  s.cost.per_output_ns = 400'000;
  s.cost.per_argmax_ns = 20'000;
  // Two running decoders with 3 tokens to go hold two of four slots; a
  // greedy one's rows are argmax rows.
  for (bool argmax : {true, false}) {
    QueuedRequest q = Waiting(10, 3);
    q.started = q.prompt_done = true;
    q.prefill_tokens = 0;
    q.cached_tokens = 10;
    q.kv_blocks = 1;
    q.argmax = argmax;
    s.requests.push_back(q);
  }
  QueuedRequest candidate = Waiting(10, 1);
  candidate.argmax = true;
  const TtftEstimate e = EstimateTtft(s, candidate, int64_t{60} * 1'000'000'000);
  // One step: the two decodes, the candidate's 10 prompt tokens, and three
  // output rows (the candidate's first token is an argmax row).
  EXPECT_EQ(e.steps, 1);
  EXPECT_EQ(e.ttft_ns, 1'000'000 + 12 * 100'000 + 400'000 + 2 * 20'000);
}

}  // namespace
}  // namespace swiftlet
