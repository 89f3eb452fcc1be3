#include "engine/scheduler.h"

#include <gtest/gtest.h>

namespace swiftlet {
namespace {

SequenceDemand Decode(int64_t tpot = 0) {
  SequenceDemand d;
  d.decoding = true;
  d.pending_tokens = 1;
  d.tpot_target_ns = tpot;
  return d;
}

SequenceDemand Prefill(int64_t pending, LatencyClass c, int64_t deadline, int64_t order) {
  SequenceDemand d;
  d.pending_tokens = pending;
  d.latency_class = c;
  d.ttft_deadline_ns = deadline;
  d.arrival_order = order;
  return d;
}

TEST(SchedulerTest, DecodesFirstThenPrefillByClassThenDeadline) {
  const SchedulerConfig cfg{20, 8};
  const std::vector<SequenceDemand> d = {
      Prefill(30, LatencyClass::kBatch, 1, 0),         // earliest deadline, but batch
      Decode(), Decode(),
      Prefill(5, LatencyClass::kInteractive, 900, 1),
      Prefill(30, LatencyClass::kInteractive, 100, 2),  // earliest interactive
  };
  const StepPlan p = PlanStep(d, cfg, {});
  // 2 decodes; 18 left: interactive deadline 100 gets a chunk of 8, then
  // deadline 900 its 5, then batch the remaining 5.
  EXPECT_EQ(p.tokens, (std::vector<int64_t>{5, 1, 1, 5, 8}));
  EXPECT_EQ(p.total, 20);
}

TEST(SchedulerTest, EmbeddingsPrefillAfterInteractiveAndBeforeBatch) {
  const SchedulerConfig cfg{12, 8};
  const std::vector<SequenceDemand> d = {
      Prefill(30, LatencyClass::kBatch, 1, 0),
      Prefill(5, LatencyClass::kEmbedding, 2, 1),
      Prefill(4, LatencyClass::kInteractive, 900, 2),
  };
  const StepPlan p = PlanStep(d, cfg, {});
  // Interactive 4, then the embedding 5, then batch the 3 left.
  EXPECT_EQ(p.tokens, (std::vector<int64_t>{3, 5, 4}));
}

TEST(SchedulerTest, BudgetCappedByTheTightestTimePerTokenButNeverBelowTheDecodes) {
  const SchedulerConfig cfg{256, 128};
  const StepCostModel cost{10e6, 1e6};  // 10 ms + 1 ms per token
  std::vector<SequenceDemand> d = {Decode(50'000'000), Decode(100'000'000),
                                   Prefill(500, LatencyClass::kInteractive, 0, 0)};
  StepPlan p = PlanStep(d, cfg, cost);
  // Planned to kStepTimeHeadroom of the target: (0.85 * 50 ms - 10 ms) /
  // 1 ms = 32.5, so 32 tokens: 2 decodes + 30 prefill.
  ASSERT_DOUBLE_EQ(kStepTimeHeadroom, 0.85);
  EXPECT_EQ(p.budget, 32);
  EXPECT_EQ(p.tokens[2], 30);
  d[0].tpot_target_ns = 5'000'000;  // below the fixed cost: decodes only
  p = PlanStep(d, cfg, cost);
  EXPECT_EQ(p.budget, 2);
  EXPECT_EQ(p.tokens, (std::vector<int64_t>{1, 1, 0}));
}

TEST(SchedulerTest, TheWorkPerOutputRowComesOffTheBudget) {
  const SchedulerConfig cfg{256, 128};
  // 10 ms + 1 ms per token + 2 ms per decode's output row (sampling, events).
  const StepCostModel cost{10e6, 1e6, 2e6};
  std::vector<SequenceDemand> d = {Decode(50'000'000), Decode(100'000'000),
                                   Prefill(500, LatencyClass::kInteractive, 0, 0)};
  const StepPlan p = PlanStep(d, cfg, cost);
  // (0.85 * 50 ms - 10 ms - 2 * 2 ms) / 1 ms = 28.5: 2 decodes + 26 prefill.
  EXPECT_EQ(p.budget, 28);
  EXPECT_EQ(p.tokens[2], 26);
  EXPECT_DOUBLE_EQ(cost.PredictNs(28, {2, 0}), 10e6 + 28e6 + 4e6);
}

TEST(SchedulerTest, ArgMaxDecodesComeOffTheBudgetAtTheirOwnRowCost) {
  const SchedulerConfig cfg{256, 128};
  // 2 ms per sampled row, 0.5 ms per argmax row.
  StepCostModel cost{10e6, 1e6, 2e6};
  cost.per_argmax_ns = 0.5e6;
  std::vector<SequenceDemand> d = {Decode(50'000'000), Decode(100'000'000),
                                   Prefill(500, LatencyClass::kInteractive, 0, 0)};
  d[0].argmax = d[1].argmax = true;
  StepPlan p = PlanStep(d, cfg, cost);
  // (0.85 * 50 ms - 10 ms - 2 * 0.5 ms) / 1 ms = 31.5: 2 decodes + 29 prefill.
  EXPECT_EQ(p.budget, 31);
  EXPECT_EQ(p.tokens[2], 29);
  // One of each: (42.5 - 10 - 2 - 0.5) / 1 = 30.
  d[1].argmax = false;
  p = PlanStep(d, cfg, cost);
  EXPECT_EQ(p.budget, 30);
  EXPECT_DOUBLE_EQ(cost.PredictNs(30, {1, 1}), 10e6 + 30e6 + 2e6 + 0.5e6);
}

}  // namespace
}  // namespace swiftlet
