// The step-cost model's learning, against steps generated from known costs.
#include "engine/step_cost.h"

#include <gtest/gtest.h>

#include <random>

namespace swiftlet {
namespace {

TEST(StepCostTest, AStepOfOneKindMovesOnlyThatKindsCost) {
  StepCostModel m;
  m.per_output_ns = 50'000;
  m.per_argmax_ns = 2'000;
  // 8 sampled rows took 800 us around the forward: 100 us a row, and the
  // cost moves a tenth of the way from 50 us.
  m.Learn(0, 0, 800'000, {8, 0});
  EXPECT_DOUBLE_EQ(m.per_output_ns, 50'000 + 0.1 * (100'000 - 50'000));
  EXPECT_DOUBLE_EQ(m.per_argmax_ns, 2'000);
  // 10 argmax rows in 30 us: 3 us a row.
  m.Learn(0, 0, 30'000, {0, 10});
  EXPECT_DOUBLE_EQ(m.per_argmax_ns, 2'000 + 0.1 * (3'000 - 2'000));
  EXPECT_DOUBLE_EQ(m.per_output_ns, 55'000);
}

TEST(StepCostTest, StepsWithFewRowsLeaveTheRowCostsAlone) {
  StepCostModel m;
  m.per_output_ns = 50'000;
  m.Learn(0, 0, 10'000'000, {3, 0});
  m.Learn(0, 0, 10'000'000, {0, 0});
  EXPECT_EQ(m.per_output_ns, 50'000);
  EXPECT_EQ(m.per_argmax_ns, 0);
}

TEST(StepCostTest, MixedStepsSeparateTheTwoRowCosts) {
  // The truth: a sampled row costs 80 us around the forward, an argmax row
  // 4 us. Steps hold random mixes, never one kind alone.
  constexpr double kSampled = 80'000, kArgMax = 4'000;
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> count(1, 32);
  StepCostModel m;
  for (int i = 0; i < 2000; ++i) {
    const OutputRows rows{count(rng), count(rng)};
    m.Learn(0, 0, kSampled * static_cast<double>(rows.sampled) + kArgMax * static_cast<double>(rows.argmax),
            rows);
  }
  EXPECT_NEAR(m.per_output_ns, kSampled, 0.01 * kSampled);
  EXPECT_NEAR(m.per_argmax_ns, kArgMax, 0.05 * kArgMax);
}

TEST(StepCostTest, ARareKindIsStillPredictedByItsOwnCost) {
  // Greedy traffic for a long while, then a step of 32 sampled rows: one
  // blended cost per row (what the model learned before the split) would
  // predict it at the argmax rows' cost.
  constexpr double kSampled = 80'000, kArgMax = 4'000;
  StepCostModel m;
  for (int i = 0; i < 20; ++i) m.Learn(0, 0, kSampled * 8, {8, 0});
  for (int i = 0; i < 1000; ++i) m.Learn(0, 0, kArgMax * 32, {0, 32});
  EXPECT_NEAR(m.AroundNs({32, 0}), 32 * kSampled, 0.15 * 32 * kSampled);
  EXPECT_NEAR(m.AroundNs({0, 32}), 32 * kArgMax, 1e-6 * 32 * kArgMax);
}

TEST(StepCostTest, LargeStepsLearnThePerTokenCostAndSmallOnesTheFixedPart) {
  // The truth: 1 ms a forward plus 50 us a token.
  constexpr double kFixed = 1'000'000, kPerToken = 50'000;
  StepCostModel m;
  for (int i = 0; i < 500; ++i) {
    const int64_t tokens = i % 2 == 0 ? 200 : 4;
    m.Learn(kFixed + kPerToken * static_cast<double>(tokens), tokens, 0, {});
  }
  EXPECT_NEAR(m.fixed_ns, kFixed, 0.01 * kFixed);
  EXPECT_NEAR(m.per_token_ns, kPerToken, 0.01 * kPerToken);
  EXPECT_EQ(m.per_output_ns, 0);
  EXPECT_DOUBLE_EQ(m.PredictNs(10, {2, 3}), m.fixed_ns + 10 * m.per_token_ns);
}

}  // namespace
}  // namespace swiftlet
