// ComputeLogprobs against the definition, in long double: log p(i) =
// x[i] - log(sum over non-NaN j of e^x[j]), and the top ids by a stable
// sort of the non-NaN ids on their logits. Rows of logits at the
// vocabulary sizes of real models, rows full of ties, with NaN and -inf,
// and rows shorter than the number of top ids asked for.
#include "engine/logprobs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace swiftlet {
namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

struct Reference {
  long double log_z;
  std::vector<int32_t> order;  // Non-NaN ids, largest logit first, ties by id.
};

Reference Exact(const std::vector<float>& x) {
  long double max = -INFINITY;
  for (float v : x) {
    if (!std::isnan(v)) max = std::max<long double>(max, v);
  }
  long double sum = 0;
  for (float v : x) {
    if (!std::isnan(v)) sum += std::exp(static_cast<long double>(v) - max);
  }
  Reference r{max + std::log(sum), {}};
  for (int32_t i = 0; i < static_cast<int32_t>(x.size()); ++i) {
    if (!std::isnan(x[i])) r.order.push_back(i);
  }
  std::stable_sort(r.order.begin(), r.order.end(), [&](int32_t a, int32_t b) { return x[a] > x[b]; });
  return r;
}

void ExpectMatches(const std::vector<float>& x, int32_t chosen, int32_t top, const char* what) {
  std::vector<float> scratch;
  const TokenLogprobs got = ComputeLogprobs(x, chosen, top, scratch);
  const Reference want = Exact(x);
  auto expect_logprob = [&](int32_t id, float logprob) {
    const long double exact = static_cast<long double>(x[id]) - want.log_z;
    if (std::isinf(exact)) {
      EXPECT_EQ(logprob, static_cast<float>(exact)) << what << " id " << id;
    } else {
      EXPECT_NEAR(logprob, static_cast<double>(exact), 2e-6 * (1 + std::abs(static_cast<double>(exact))))
          << what << " id " << id;
    }
  };
  EXPECT_EQ(got.chosen.id, chosen) << what;
  expect_logprob(chosen, got.chosen.logprob);
  const size_t k = std::min<size_t>(static_cast<size_t>(top), want.order.size());
  ASSERT_EQ(got.top.size(), k) << what;
  for (size_t i = 0; i < k; ++i) {
    EXPECT_EQ(got.top[i].id, want.order[i]) << what << " rank " << i;
    expect_logprob(got.top[i].id, got.top[i].logprob);
  }
}

TEST(LogprobsTest, LogitRowsMatchTheDefinition) {
  std::mt19937 rng(9);
  for (int64_t n : {1, 2, 5, 31, 32000, 151936}) {
    for (float spread : {0.5f, 3.0f, 30.0f}) {
      std::normal_distribution<float> d(0, spread);
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = d(rng);
      const auto chosen = static_cast<int32_t>(rng() % n);
      for (int32_t top : {0, 1, 5, 20}) ExpectMatches(x, chosen, top, "normal");
    }
  }
}

TEST(LogprobsTest, TiesKeepIdOrderAndNaNIsNeverListed) {
  std::mt19937 rng(4);
  const float levels[] = {-kInf, -2, 0, 1.5f, 1.5f, kNan};
  for (int64_t n : {3, 7, 40, 5000}) {
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> x(static_cast<size_t>(n));
      for (float& v : x) v = levels[rng() % 6];
      x[rng() % n] = 1.5f;  // At least one finite value.
      int32_t chosen = 0;
      while (std::isnan(x[chosen])) ++chosen;
      for (int32_t top : {0, 3, 20}) ExpectMatches(x, chosen, top, "levels");
    }
  }
  // Fewer non-NaN ids than asked for: only those.
  ExpectMatches({kNan, 2, kNan, 2, -kInf}, 1, 20, "short");
}

// A broken model's rows, worked by hand: never a NaN logprob.
TEST(LogprobsTest, RowsWithoutADistributionGiveNoNaN) {
  std::vector<float> scratch;
  const float log_half = -std::log(2.0f);
  struct Row {
    std::vector<float> x;
    int32_t chosen;
    float want_chosen;
    std::vector<TokenLogprob> want_top;  // The top 3.
  };
  const std::vector<Row> rows = {
      // Two +inf ids share the mass; the rest have none.
      {{1, kInf, 5, kInf, kNan}, 1, log_half, {{1, log_half}, {3, log_half}, {2, -kInf}}},
      {{1, kInf, 5, kInf, kNan}, 2, -kInf, {{1, log_half}, {3, log_half}, {2, -kInf}}},
      // Nothing above -inf: no id has any mass.
      {{-kInf, -kInf, kNan}, 1, -kInf, {{0, -kInf}, {1, -kInf}}},
      // Every logit NaN (a greedy row takes id 0): nothing listed.
      {{kNan, kNan, kNan}, 0, -kInf, {}},
      // A NaN chosen (the greedy row's first logit) among finite ones.
      {{kNan, 0, 0}, 0, -kInf, {{1, log_half}, {2, log_half}}},
  };
  for (size_t r = 0; r < rows.size(); ++r) {
    const TokenLogprobs got = ComputeLogprobs(rows[r].x, rows[r].chosen, 3, scratch);
    EXPECT_EQ(got.chosen.id, rows[r].chosen) << "row " << r;
    EXPECT_FLOAT_EQ(got.chosen.logprob, rows[r].want_chosen) << "row " << r;
    ASSERT_EQ(got.top.size(), rows[r].want_top.size()) << "row " << r;
    for (size_t i = 0; i < got.top.size(); ++i) {
      EXPECT_EQ(got.top[i].id, rows[r].want_top[i].id) << "row " << r << " rank " << i;
      EXPECT_FLOAT_EQ(got.top[i].logprob, rows[r].want_top[i].logprob) << "row " << r << " rank " << i;
    }
  }
}

}  // namespace
}  // namespace swiftlet
