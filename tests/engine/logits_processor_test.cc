#include "engine/logits_processor.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace swiftlet {
namespace {

TEST(PenaltyProcessorTest, RepetitionDividesPositiveAndMultipliesNegative) {
  PenaltyProcessor p(/*repetition=*/2.0f, 0.0f, 0.0f, /*last_n=*/-1);
  std::vector<float> logits = {3.0f, -1.5f, 4.0f, 0.0f};
  std::vector<int32_t> history = {0, 1, 1, 3};
  p.Apply(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 1.5f);   // 3 / 2
  EXPECT_FLOAT_EQ(logits[1], -3.0f);  // -1.5 * 2, once despite two hits
  EXPECT_FLOAT_EQ(logits[2], 4.0f);   // not in history
  EXPECT_FLOAT_EQ(logits[3], 0.0f);   // 0 * 2
}

TEST(PenaltyProcessorTest, PresenceAndFrequency) {
  PenaltyProcessor p(1.0f, /*presence=*/0.5f, /*frequency=*/0.25f, -1);
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  std::vector<int32_t> history = {2, 0, 2, 2};
  p.Apply(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 1.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(logits[1], 1.0f);
  EXPECT_FLOAT_EQ(logits[2], 1.0f - 0.5f - 0.75f);
  EXPECT_FLOAT_EQ(logits[3], 1.0f);
}

TEST(PenaltyProcessorTest, AllThreeInOrder) {
  PenaltyProcessor p(2.0f, 0.5f, 0.25f, -1);
  std::vector<float> logits = {2.0f, -1.0f};
  std::vector<int32_t> history = {0, 0, 1};
  p.Apply(logits, history);
  EXPECT_FLOAT_EQ(logits[0], 2.0f / 2 - 0.5f - 0.25f * 2);  // 0
  EXPECT_FLOAT_EQ(logits[1], -1.0f * 2 - 0.5f - 0.25f);     // -2.75
}

TEST(PenaltyProcessorTest, WindowCoversOnlyLastN) {
  std::vector<int32_t> history = {0, 1, 1, 2};
  {
    PenaltyProcessor p(1.0f, 0.0f, 1.0f, /*last_n=*/2);
    std::vector<float> logits(3, 0.0f);
    p.Apply(logits, history);
    EXPECT_FLOAT_EQ(logits[0], 0.0f);
    EXPECT_FLOAT_EQ(logits[1], -1.0f);  // only one of the two 1s is in range
    EXPECT_FLOAT_EQ(logits[2], -1.0f);
  }
  {
    PenaltyProcessor p(1.0f, 0.0f, 1.0f, /*last_n=*/0);
    std::vector<float> logits(3, 0.0f);
    p.Apply(logits, history);
    EXPECT_EQ(logits, std::vector<float>(3, 0.0f));
  }
  {
    PenaltyProcessor p(1.0f, 0.0f, 1.0f, /*last_n=*/100);
    std::vector<float> logits(3, 0.0f);
    p.Apply(logits, history);
    EXPECT_EQ(logits, (std::vector<float>{-1.0f, -2.0f, -1.0f}));
  }
}

TEST(PenaltyProcessorTest, ReuseAcrossCallsStartsFresh) {
  PenaltyProcessor p(1.0f, 0.0f, 1.0f, -1);
  std::vector<int32_t> history = {1, 1};
  for (int i = 0; i < 3; ++i) {
    std::vector<float> logits(2, 0.0f);
    p.Apply(logits, history);
    EXPECT_FLOAT_EQ(logits[1], -2.0f) << "call " << i;
    EXPECT_FLOAT_EQ(logits[0], 0.0f) << "call " << i;
  }
}

}  // namespace
}  // namespace swiftlet
