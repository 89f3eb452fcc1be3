#include "engine/sampling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace swiftlet {
namespace {

using ::testing::HasSubstr;

// Reference: softmax(logits / t) in double.
std::vector<double> RefSoftmax(const std::vector<float>& logits, double t) {
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> p(logits.size());
  double sum = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    p[i] = std::exp((logits[i] - max) / t);
    sum += p[i];
  }
  for (double& x : p) x /= sum;
  return p;
}

int32_t SampleOnce(Sampler& s, const std::vector<float>& logits,
                   const std::vector<int32_t>& history = {}) {
  std::vector<float> scratch = logits;
  return s.Sample(scratch, history);
}

// Draws `n` tokens from one sampler and counts them per id.
std::vector<int> SampleCounts(const SamplingParams& params,
                           const std::vector<float>& logits, int n) {
  Sampler s(params);
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n; ++i) ++counts[SampleOnce(s, logits)];
  return counts;
}

// The set of ids seen over one draw each from `seeds` differently seeded
// samplers.
std::set<int32_t> IdsSeen(SamplingParams params,
                          const std::vector<float>& logits, int seeds) {
  std::set<int32_t> seen;
  for (int seed = 0; seed < seeds; ++seed) {
    params.seed = static_cast<uint64_t>(seed);
    Sampler s(params);
    seen.insert(SampleOnce(s, logits));
  }
  return seen;
}

// Pearson chi-square of counts against expected probabilities.
double ChiSquare(const std::vector<int>& counts,
                 const std::vector<double>& probs) {
  double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  double chi2 = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "id " << i << " has zero probability";
      continue;
    }
    double e = n * probs[i];
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi2;
}

void ExpectWithinFiveSigma(const std::vector<int>& counts,
                           const std::vector<double>& probs) {
  double n = std::accumulate(counts.begin(), counts.end(), 0.0);
  for (size_t i = 0; i < counts.size(); ++i) {
    double e = n * probs[i];
    double sigma = std::sqrt(n * probs[i] * (1 - probs[i]));
    EXPECT_LE(std::abs(counts[i] - e), 5 * sigma + 1e-9)
        << "id " << i << " count " << counts[i] << " expected " << e;
  }
}

// ---------------------------------------------------------------- validation

TEST(ValidateSamplingParamsTest, DefaultsAreValid) {
  EXPECT_TRUE(ValidateSamplingParams(SamplingParams{}).ok());
  SamplingParams edge;
  edge.temperature = 0.0f;
  edge.top_p = 1.0f;
  edge.min_p = 1.0f;
  edge.repetition_penalty = 10.0f;
  edge.presence_penalty = -2.0f;
  edge.frequency_penalty = 2.0f;
  edge.penalty_last_n = -1;
  EXPECT_TRUE(ValidateSamplingParams(edge).ok());
  edge.temperature = 100.0f;
  EXPECT_TRUE(ValidateSamplingParams(edge).ok());
}

TEST(ValidateSamplingParamsTest, RejectsEachFieldNamingIt) {
  struct Case {
    std::string field;
    void (*mutate)(SamplingParams&);
  };
  const std::vector<Case> cases = {
      {"temperature", [](SamplingParams& p) { p.temperature = -0.1f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = 100.5f; }},
      {"temperature", [](SamplingParams& p) { p.temperature = std::nanf(""); }},
      {"top_k", [](SamplingParams& p) { p.top_k = -1; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 0.0f; }},
      {"top_p", [](SamplingParams& p) { p.top_p = 1.01f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = -0.01f; }},
      {"min_p", [](SamplingParams& p) { p.min_p = 1.5f; }},
      {"repetition_penalty",
       [](SamplingParams& p) { p.repetition_penalty = 0.0f; }},
      {"repetition_penalty",
       [](SamplingParams& p) { p.repetition_penalty = 10.5f; }},
      {"presence_penalty",
       [](SamplingParams& p) { p.presence_penalty = -2.5f; }},
      {"presence_penalty", [](SamplingParams& p) { p.presence_penalty = 3; }},
      {"frequency_penalty",
       [](SamplingParams& p) { p.frequency_penalty = -2.01f; }},
      {"frequency_penalty",
       [](SamplingParams& p) { p.frequency_penalty = 2.01f; }},
      {"penalty_last_n", [](SamplingParams& p) { p.penalty_last_n = -2; }},
  };
  for (const Case& c : cases) {
    SamplingParams p;
    c.mutate(p);
    absl::Status status = ValidateSamplingParams(p);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << c.field;
    EXPECT_THAT(std::string(status.message()), HasSubstr(c.field));
  }
}

// -------------------------------------------------------------------- greedy

TEST(SamplerTest, GreedyPicksArgmaxTiesToLowestId) {
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler s(params);
  EXPECT_EQ(SampleOnce(s, {0.1f, 2.0f, -3.0f, 1.9f}), 1);
  EXPECT_EQ(SampleOnce(s, {-5.0f, -1.0f, -1.0f, -2.0f}), 1);
  EXPECT_EQ(SampleOnce(s, {7.0f, 7.0f}), 0);
  EXPECT_EQ(SampleOnce(s, {-1e30f, -1e30f, 3.0f}), 2);
  EXPECT_EQ(SampleOnce(s, {42.0f}), 0);
}

TEST(SamplerTest, TopKOneIsGreedyAtAnyTemperature) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float t : {0.1f, 1.0f, 5.0f, 100.0f}) {
    SamplingParams params;
    params.temperature = t;
    params.top_k = 1;
    for (int trial = 0; trial < 50; ++trial) {
      params.seed = static_cast<uint64_t>(trial);
      std::vector<float> logits(1000);
      for (float& l : logits) l = normal(gen);
      int32_t argmax = static_cast<int32_t>(
          std::max_element(logits.begin(), logits.end()) - logits.begin());
      Sampler s(params);
      EXPECT_EQ(SampleOnce(s, logits), argmax) << "t=" << t;
    }
  }
}

TEST(SamplerTest, PenaltiesRunBeforeGreedy) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.repetition_penalty = 2.0f;
  Sampler s(params);
  // Token 1 would win at 1.5, but is penalized to 0.75 < 1.0.
  EXPECT_EQ(SampleOnce(s, {1.0f, 1.5f}, {1}), 0);
  EXPECT_EQ(SampleOnce(s, {1.0f, 1.5f}, {}), 1);

  SamplingParams window = params;
  window.penalty_last_n = 1;
  Sampler w(window);
  // Token 1 is outside the one-token window: no penalty.
  EXPECT_EQ(SampleOnce(w, {1.0f, 1.5f}, {1, 0}), 1);
}

TEST(SamplerTest, SampleRewritesLogitsWithPenalties) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.presence_penalty = 1.0f;
  params.frequency_penalty = 0.5f;
  Sampler s(params);
  std::vector<float> logits = {3.0f, 3.0f, 3.0f};
  std::vector<int32_t> history = {0, 0, 2};
  EXPECT_EQ(s.Sample(logits, history), 1);
  EXPECT_FLOAT_EQ(logits[0], 3.0f - 1.0f - 1.0f);
  EXPECT_FLOAT_EQ(logits[1], 3.0f);
  EXPECT_FLOAT_EQ(logits[2], 3.0f - 1.0f - 0.5f);
}

// Records the logits it sees, then masks out token `mask`.
class RecordingMask : public LogitsProcessor {
 public:
  RecordingMask(int32_t mask, std::vector<float>* seen)
      : mask_(mask), seen_(seen) {}
  void Apply(std::span<float> logits, std::span<const int32_t>) override {
    seen_->assign(logits.begin(), logits.end());
    logits[mask_] = -std::numeric_limits<float>::infinity();
  }

 private:
  int32_t mask_;
  std::vector<float>* seen_;
};

TEST(SamplerTest, CustomProcessorsRunAfterPenaltiesInOrder) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.frequency_penalty = 1.0f;
  Sampler s(params);
  std::vector<float> first_saw, second_saw;
  s.AddProcessor(std::make_unique<RecordingMask>(2, &first_saw));
  s.AddProcessor(std::make_unique<RecordingMask>(0, &second_saw));
  std::vector<float> logits = {5.0f, 1.0f, 4.0f, 0.0f};
  EXPECT_EQ(s.Sample(logits, std::vector<int32_t>{0, 0, 0}), 1);
  EXPECT_EQ(first_saw, (std::vector<float>{2.0f, 1.0f, 4.0f, 0.0f}));
  EXPECT_EQ(second_saw[0], 2.0f);
  EXPECT_TRUE(std::isinf(second_saw[2]) && second_saw[2] < 0);
}

TEST(SamplerTest, MaskedTokensAreNeverSampled) {
  SamplingParams params;
  params.temperature = 1.0f;
  std::vector<float> ignored;
  std::set<int32_t> seen;
  for (int seed = 0; seed < 300; ++seed) {
    params.seed = static_cast<uint64_t>(seed);
    Sampler s(params);
    s.AddProcessor(std::make_unique<RecordingMask>(1, &ignored));
    seen.insert(SampleOnce(s, {0.0f, 0.0f, 0.0f}));
  }
  EXPECT_EQ(seen, (std::set<int32_t>{0, 2}));
}

// Whether a sampler's token is its logits' argmax (the engine then asks the
// device for the argmax alone): only at temperature 0 with no penalty and
// no processor, and then Sample() agrees with the first largest logit
// whatever the history.
TEST(SamplerTest, ReturnsArgMaxOnlyWhenNothingElseActsOnTheLogits) {
  struct Case {
    SamplingParams params;
    bool processor;
    bool argmax;
  };
  auto with = [](auto edit) {
    SamplingParams p;
    p.temperature = 0.0f;
    edit(p);
    return p;
  };
  const Case cases[] = {
      {with([](SamplingParams&) {}), false, true},
      {with([](SamplingParams& p) { p.top_k = 5; p.top_p = 0.5f; p.min_p = 0.1f; }), false, true},
      {with([](SamplingParams& p) { p.repetition_penalty = 1.1f; p.penalty_last_n = 0; }), false, true},
      {with([](SamplingParams& p) { p.temperature = 0.5f; }), false, false},
      {with([](SamplingParams& p) { p.repetition_penalty = 1.1f; }), false, false},
      {with([](SamplingParams& p) { p.presence_penalty = 0.5f; }), false, false},
      {with([](SamplingParams& p) { p.frequency_penalty = -0.5f; }), false, false},
      {with([](SamplingParams&) {}), true, false},
  };
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> ignored;
  for (size_t i = 0; i < std::size(cases); ++i) {
    const Case& c = cases[i];
    EXPECT_EQ(SamplesArgMax(c.params), c.argmax || c.processor) << i;  // The parameters alone.
    Sampler s(c.params);
    if (c.processor) s.AddProcessor(std::make_unique<RecordingMask>(0, &ignored));
    ASSERT_EQ(s.ReturnsArgMax(), c.argmax) << i;
    if (!c.argmax) continue;
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<float> logits(300);
      for (float& l : logits) l = normal(gen);
      const auto largest = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
      EXPECT_EQ(SampleOnce(s, logits, {largest, largest, 7}), largest) << i;
    }
  }
}

// -------------------------------------------------------------- distribution

TEST(SamplerTest, FrequenciesMatchSoftmaxWithTemperature) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 3.0f, 0.0f};
  for (float t : {0.5f, 1.0f, 2.0f}) {
    SamplingParams params;
    params.temperature = t;
    params.seed = 1234;
    const int n = 20000;
    std::vector<int> counts = SampleCounts(params, logits, n);
    std::vector<double> probs = RefSoftmax(logits, t);
    // df = 5; P(chi2 > 40) ~ 1e-7.
    EXPECT_LT(ChiSquare(counts, probs), 40.0) << "t=" << t;
    ExpectWithinFiveSigma(counts, probs);
  }
}

TEST(SamplerTest, TopKFrequenciesMatchRenormalizedSoftmax) {
  const std::vector<float> logits = {0.5f, 2.0f, 1.5f, -1.0f, 1.0f, 0.9f};
  SamplingParams params;
  params.temperature = 0.8f;
  params.top_k = 3;  // keeps ids 1, 2, 4
  params.seed = 99;
  std::vector<int> counts = SampleCounts(params, logits, 20000);
  std::vector<float> kept = {-INFINITY, 2.0f, 1.5f, -INFINITY, 1.0f,
                             -INFINITY};
  std::vector<double> probs = RefSoftmax(kept, 0.8);
  EXPECT_LT(ChiSquare(counts, probs), 40.0);
  ExpectWithinFiveSigma(counts, probs);
}

// Logits whose softmax at t=1 is exactly `probs`.
std::vector<float> LogitsFor(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)));
  return logits;
}

TEST(SamplerTest, TopPKeepsSmallestSufficientPrefix) {
  // Sorted: id1 0.5, id3 0.25, id2 0.15, id0 0.1.
  const std::vector<float> logits = LogitsFor({0.1, 0.5, 0.15, 0.25});
  SamplingParams params;
  params.top_p = 0.6f;  // 0.5 < 0.6 <= 0.75
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{1, 3}));
  params.top_p = 0.8f;  // 0.75 < 0.8 <= 0.9
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{1, 2, 3}));
  params.top_p = 0.4f;  // the top token alone already covers it
  EXPECT_EQ(IdsSeen(params, logits, 200), (std::set<int32_t>{1}));
  params.top_p = 0.95f;
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(SamplerTest, TopPFrequenciesMatchRenormalized) {
  const std::vector<float> logits = LogitsFor({0.1, 0.5, 0.15, 0.25});
  SamplingParams params;
  params.top_p = 0.8f;
  params.seed = 5;
  std::vector<int> counts = SampleCounts(params, logits, 20000);
  std::vector<double> probs = {0.0, 0.5 / 0.9, 0.15 / 0.9, 0.25 / 0.9};
  EXPECT_LT(ChiSquare(counts, probs), 40.0);
  ExpectWithinFiveSigma(counts, probs);
}

TEST(SamplerTest, MinPKeepsTokensAboveFractionOfMax) {
  const std::vector<float> logits = LogitsFor({0.1, 0.5, 0.15, 0.25});
  SamplingParams params;
  params.min_p = 0.25f;  // threshold 0.125
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{1, 2, 3}));
  params.min_p = 0.4f;  // threshold 0.2
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{1, 3}));
  params.min_p = 0.9f;
  EXPECT_EQ(IdsSeen(params, logits, 200), (std::set<int32_t>{1}));
  params.min_p = 0.1f;  // threshold 0.05
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{0, 1, 2, 3}));
}

TEST(SamplerTest, MinPUsesTemperatureScaledProbabilities) {
  // At t=2, probs ~ sqrt(p): sqrt(.1)=.316, sqrt(.5)=.707, sqrt(.15)=.387,
  // sqrt(.25)=.5; ratios to max: .447, 1, .548, .707. min_p 0.5 drops id 0.
  const std::vector<float> logits = LogitsFor({0.1, 0.5, 0.15, 0.25});
  SamplingParams params;
  params.temperature = 2.0f;
  params.min_p = 0.5f;
  EXPECT_EQ(IdsSeen(params, logits, 500), (std::set<int32_t>{1, 2, 3}));
}

TEST(SamplerTest, TopKThenTopPThenMinP) {
  // Sorted probs: id4 .4, id0 .2, id2 .15, id5 .12, id1 .08, id3 .05.
  const std::vector<float> logits =
      LogitsFor({0.2, 0.08, 0.15, 0.05, 0.4, 0.12});
  SamplingParams params;
  params.top_k = 4;     // {4, 0, 2, 5}, mass .87
  params.top_p = 0.8f;  // of .87: .4/.87=.46, .6/.87=.69, .75/.87=.862 -> 3
  EXPECT_EQ(IdsSeen(params, logits, 800), (std::set<int32_t>{0, 2, 4}));
  params.min_p = 0.45f;  // threshold .18 drops id 2
  EXPECT_EQ(IdsSeen(params, logits, 800), (std::set<int32_t>{0, 4}));
}

// Large vocabulary: top-p over many tokens (past the first selection chunk)
// must equal a full-sort reference, and so must top-k.
TEST(SamplerTest, LargeVocabularyCandidatesMatchReference) {
  const size_t vocab = 150000;
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> logits(vocab);
  for (float& l : logits) l = normal(gen);

  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  });

  auto candidate_ids = [](const Sampler& s) {
    std::set<int32_t> ids;
    for (const TokenProb& c : s.last_candidates()) ids.insert(c.id);
    return ids;
  };

  for (float top_p : {0.001f, 0.05f, 0.5f, 0.9f}) {
    SamplingParams params;
    params.top_p = top_p;
    Sampler s(params);
    int32_t token = SampleOnce(s, logits);
    std::vector<double> probs = RefSoftmax(logits, 1.0);
    double cumulative = 0;
    std::set<int32_t> expected;
    for (int32_t id : order) {
      expected.insert(id);
      cumulative += probs[id];
      if (cumulative >= top_p) break;
    }
    EXPECT_EQ(candidate_ids(s), expected) << "top_p=" << top_p;
    EXPECT_TRUE(expected.count(token));
  }

  for (int32_t k : {1, 10, 5000}) {
    SamplingParams params;
    params.top_k = k;
    Sampler s(params);
    int32_t token = SampleOnce(s, logits);
    std::set<int32_t> expected(order.begin(), order.begin() + k);
    EXPECT_EQ(candidate_ids(s), expected) << "top_k=" << k;
    EXPECT_TRUE(expected.count(token));
  }
}

// Top-p then min-p, and min-p alone, over more ids than TopP sorts whole
// (the row's own passes, without a copy of every id): the candidates equal
// a reference that sorts every id by its probability in double, and no id
// appears twice.
TEST(SamplerTest, TopPAndMinPOverManyIdsMatchReference) {
  std::mt19937 gen(8);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (size_t vocab : {1025, 5000, 150001}) {
    std::vector<float> logits(vocab);
    for (float& l : logits) l = normal(gen);
    logits[vocab / 3] = -std::numeric_limits<float>::infinity();
    for (float temperature : {0.5f, 1.3f}) {
      const std::vector<double> probs = RefSoftmax(logits, temperature);
      std::vector<int32_t> order(vocab);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return probs[a] > probs[b]; });
      const double p_max = probs[order[0]];
      for (float top_p : {1.0f, 0.3f, 0.9f}) {
        for (float min_p : {0.0f, 0.02f, 0.3f}) {
          if (top_p == 1.0f && min_p == 0.0f) continue;  // no candidates: the row itself
          std::set<int32_t> want;
          double cumulative = 0;
          for (int32_t id : order) {
            if (top_p < 1.0f && cumulative >= top_p) break;
            cumulative += probs[id];
            if (probs[id] >= min_p * p_max) want.insert(id);
          }
          SamplingParams params;
          params.temperature = temperature;
          params.top_p = top_p;
          params.min_p = min_p;
          Sampler s(params);
          const int32_t token = SampleOnce(s, logits);
          std::vector<int32_t> got_ids;
          for (const TokenProb& c : s.last_candidates()) got_ids.push_back(c.id);
          const std::set<int32_t> got(got_ids.begin(), got_ids.end());
          SCOPED_TRACE(::testing::Message() << "vocab " << vocab << " t " << temperature << " top_p " << top_p
                                            << " min_p " << min_p);
          EXPECT_EQ(got.size(), got_ids.size());
          EXPECT_EQ(got, want);
          EXPECT_TRUE(want.count(token));
        }
      }
    }
  }
}

// The draw over what top-p keeps of many ids: a few ids carry most of the
// mass among 3,000 near -inf; each is drawn at its renormalized probability.
TEST(SamplerTest, TopPOverManyIdsDrawsAtTheRenormalizedProbabilities) {
  std::vector<float> logits(3000, -30.0f);
  const std::vector<float> heavy = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f};
  const std::vector<int32_t> at = {2999, 7, 1500, 0, 2000};
  for (size_t i = 0; i < heavy.size(); ++i) logits[at[i]] = heavy[i];
  SamplingParams params;
  params.top_p = 0.85f;
  params.seed = 17;
  const std::vector<double> probs = RefSoftmax(logits, 1.0);
  // Sorted: ids 2999, 7, 1500, 0, 2000; the first three hold 0.4, 0.24
  // and 0.15 of the mass (0.79), the fourth brings it past 0.85.
  double kept = 0;
  for (int i = 0; i < 4; ++i) kept += probs[at[i]];
  ASSERT_LT(kept - probs[at[3]], 0.85);
  ASSERT_GE(kept, 0.85);
  std::vector<double> want(logits.size(), 0.0);
  for (int i = 0; i < 4; ++i) want[at[i]] = probs[at[i]] / kept;
  const std::vector<int> counts = SampleCounts(params, logits, 20000);
  EXPECT_LT(ChiSquare(counts, want), 40.0);
  ExpectWithinFiveSigma(counts, want);
}

// The candidate ids of one draw.
std::set<int32_t> CandidateIds(const SamplingParams& params, const std::vector<float>& logits) {
  Sampler s(params);
  (void)SampleOnce(s, logits);
  std::set<int32_t> ids;
  for (const TokenProb& c : s.last_candidates()) ids.insert(c.id);
  return ids;
}

std::set<int32_t> IdRange(int32_t first, int32_t end) {
  std::set<int32_t> ids;
  for (int32_t i = first; i < end; ++i) ids.insert(i);
  return ids;
}

// Top-k keeping more than TopP sorts whole (k > V / 16), then top-p over
// those candidates: the same reference, applied to the top k.
TEST(SamplerTest, TopPOverManyTopKCandidatesMatchesReference) {
  std::mt19937 gen(9);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> logits(40000);
  for (float& l : logits) l = normal(gen);
  std::vector<int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  for (int32_t k : {3000, 20000}) {
    for (float top_p : {0.2f, 0.9f}) {
      std::vector<float> top(static_cast<size_t>(k));
      for (int32_t i = 0; i < k; ++i) top[static_cast<size_t>(i)] = logits[static_cast<size_t>(order[i])];
      const std::vector<double> probs = RefSoftmax(top, 0.9);  // in `order`'s order
      std::set<int32_t> want;
      double cumulative = 0;
      for (int32_t i = 0; i < k && cumulative < top_p; ++i) {
        cumulative += probs[static_cast<size_t>(i)];
        want.insert(order[i]);
      }
      SamplingParams params;
      params.temperature = 0.9f;
      params.top_k = k;
      params.top_p = top_p;
      EXPECT_EQ(CandidateIds(params, logits), want) << "k " << k << " top_p " << top_p;
    }
  }
}

TEST(SamplerTest, TopKOfAFewAmongManyKeepsTheLowestIdsOfATie) {
  // 20,000 ids (top-k takes a single pass for k this small): all tie but
  // id 15,000, the best; the other four are the lowest ids, not the last
  // ones seen.
  std::vector<float> logits(20000, 0.5f);
  logits[15000] = 3.0f;
  SamplingParams params;
  params.top_k = 5;
  EXPECT_EQ(CandidateIds(params, logits), (std::set<int32_t>{0, 1, 2, 3, 15000}));
  // Rising logits: every id displaces the worst kept.
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i);
  EXPECT_EQ(CandidateIds(params, logits), IdRange(19995, 20000));
  // Falling: none does after the first k.
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = -static_cast<float>(i);
  EXPECT_EQ(CandidateIds(params, logits), IdRange(0, 5));
}

TEST(SamplerTest, TopPOverManyCandidatesCutsATieAtTheLowerIds) {
  // 5,000 equal logits: every id has p = 1, so the head of mass 0.5 is
  // exactly the 2,500 lowest ids (the candidates past TopP's sorting limit
  // go through its buckets, all of them in one).
  SamplingParams params;
  params.top_p = 0.5f;
  EXPECT_EQ(CandidateIds(params, std::vector<float>(5000, 1.0f)), IdRange(0, 2500));
  // Two levels: 1,500 ids at logit ln 4 (p = 1 each after the max's shift)
  // and 3,500 at 0 (p = 1/4): mass 1,500 + 875. Top-p 0.755 asks for
  // 1,793.125: all of the first level and 1,173 of the second (1,172 give
  // 293), its lowest ids.
  std::vector<float> two(5000, 0.0f);
  for (int i = 3500; i < 5000; ++i) two[static_cast<size_t>(i)] = std::log(4.0f);
  params.top_p = 0.755f;
  std::set<int32_t> want = IdRange(3500, 5000);
  for (int32_t i = 0; i < 1173; ++i) want.insert(i);
  EXPECT_EQ(CandidateIds(params, two), want);
}

TEST(SamplerTest, NaNLogitsAreNeverDrawn) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  // Rising logits with NaN at ids 0 and 500: top-k over many ids (a NaN
  // among the first k must not stop the pass), top-p over many, and the
  // whole row.
  std::vector<float> logits(1000);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i) * 0.01f;
  logits[0] = logits[500] = nan;
  SamplingParams params;
  params.top_k = 3;
  EXPECT_EQ(CandidateIds(params, logits), IdRange(997, 1000));
  params.top_k = 0;
  params.top_p = 0.99f;
  std::set<int32_t> top_p = CandidateIds(params, logits);
  EXPECT_FALSE(top_p.count(0) || top_p.count(500));
  EXPECT_TRUE(top_p.count(999));
  params.top_p = 1.0f;
  for (int32_t id : IdsSeen(params, logits, 400)) EXPECT_TRUE(id != 0 && id != 500) << id;
}

TEST(SamplerTest, NoTokenWhenEveryLogitIsMaskedOrNaNOrOneIsInfinite) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> rows = {
      std::vector<float>(2000, -inf), std::vector<float>(2000, nan), {nan, -inf, nan}, {0.5f, inf, 1.0f}};
  for (size_t i = 0; i < rows.size(); ++i) {
    // The whole row, top-k (a few and many), top-p, min-p.
    for (int32_t top_k : {0, 2, 1500}) {
      for (float top_p : {1.0f, 0.5f}) {
        SamplingParams params;
        params.top_k = top_k;
        params.top_p = top_p;
        params.min_p = top_p < 1.0f ? 0.1f : 0.0f;
        Sampler s(params);
        EXPECT_EQ(SampleOnce(s, rows[i]), Sampler::kNoToken) << "row " << i << " top_k " << top_k;
      }
    }
    // Greedy: nothing above -inf but NaN is no token too; a +inf is the
    // largest value, and taken.
    SamplingParams greedy;
    greedy.temperature = 0;
    Sampler g(greedy);
    EXPECT_EQ(SampleOnce(g, rows[i]), i == 3 ? 1 : Sampler::kNoToken) << "greedy, row " << i;
  }
}

TEST(SamplerTest, ATinyTemperatureDrawsTheLargestLogit) {
  // 1 / 1e-39 overflows a float; every path still keeps only the max.
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f, 0.5f};
  SamplingParams params;
  params.temperature = 1e-39f;
  EXPECT_EQ(IdsSeen(params, logits, 50), (std::set<int32_t>{2}));
  params.top_k = 3;
  EXPECT_EQ(IdsSeen(params, logits, 50), (std::set<int32_t>{2}));
}

TEST(SamplerTest, TopKTiesGoToLowerIds) {
  SamplingParams params;
  params.top_k = 2;
  std::vector<float> logits = {1.0f, 2.0f, 2.0f, 2.0f, 0.0f};
  EXPECT_EQ(IdsSeen(params, logits, 300), (std::set<int32_t>{1, 2}));
}

// ---------------------------------------------------------------- seeding

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDifferent) {
  const std::vector<float> logits(50, 0.0f);
  auto sequence = [&](uint64_t seed) {
    SamplingParams params;
    params.seed = seed;
    params.top_k = 40;
    params.top_p = 0.9f;
    Sampler s(params);
    std::vector<int32_t> out;
    for (int i = 0; i < 100; ++i) out.push_back(SampleOnce(s, logits));
    return out;
  };
  EXPECT_EQ(sequence(17), sequence(17));
  EXPECT_NE(sequence(17), sequence(18));
  EXPECT_NE(sequence(0), sequence(1));
}

TEST(SamplerTest, SamplersAreIndependent) {
  const std::vector<float> logits(20, 0.0f);
  SamplingParams params;
  params.seed = 42;
  Sampler alone(params);
  std::vector<int32_t> expected;
  for (int i = 0; i < 50; ++i) expected.push_back(SampleOnce(alone, logits));

  Sampler a(params);
  SamplingParams other = params;
  other.seed = 7;
  Sampler b(other);
  std::vector<int32_t> interleaved;
  for (int i = 0; i < 50; ++i) {
    interleaved.push_back(SampleOnce(a, logits));
    SampleOnce(b, logits);
  }
  EXPECT_EQ(interleaved, expected);
}

TEST(SamplerTest, DrawUsesTop53BitsOfMt19937_64) {
  // With uniform logits over 4 tokens, the draw is floor(u * 4) where
  // u = (mt19937_64() >> 11) / 2^53: computed here independently.
  const std::vector<float> logits(4, 0.0f);
  SamplingParams params;
  params.seed = 2024;
  Sampler s(params);
  std::mt19937_64 rng(2024);
  for (int i = 0; i < 200; ++i) {
    double u = static_cast<double>(rng() >> 11) / 9007199254740992.0;
    EXPECT_EQ(SampleOnce(s, logits), static_cast<int32_t>(u * 4)) << i;
  }
}

TEST(SamplerTest, ADrawOverEveryIdTakesTheIdWhereTheExactRunningSumPassesUTimesTheTotal) {
  // Temperature alone over a large row: the draw walks the row's block
  // sums, then one block. For each draw's u (the top 53 bits of the seeded
  // mt19937_64, made here independently), the id whose running sum in long
  // double first passes u times the total of exp((x - max) / t); draws
  // where u lands within the weights' rounding of a boundary are skipped.
  std::mt19937 gen(31);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (int64_t n : {1025, 10000, 151936}) {
    std::vector<float> logits(static_cast<size_t>(n));
    for (float& v : logits) v = normal(gen);
    for (int64_t i = 0; i < n; i += 97) logits[static_cast<size_t>(i)] = -std::numeric_limits<float>::infinity();
    for (float t : {0.6f, 1.0f}) {
      const float max = *std::max_element(logits.begin(), logits.end());
      std::vector<long double> running(static_cast<size_t>(n));
      long double sum = 0;
      for (size_t i = 0; i < logits.size(); ++i) {
        sum += std::exp(static_cast<long double>(logits[i] - max) / t);
        running[i] = sum;
      }
      SamplingParams params;
      params.temperature = t;
      params.seed = 77;
      Sampler s(params);
      std::mt19937_64 rng(77);
      int checked = 0;
      for (int draw = 0; draw < 200; ++draw) {
        const long double target = static_cast<long double>(rng() >> 11) * 0x1p-53L * sum;
        const int32_t got = SampleOnce(s, logits);
        const auto at = std::upper_bound(running.begin(), running.end(), target);
        ASSERT_NE(at, running.end());
        const long double slack = 1e-6L * sum;  // the float exps' few ulp, summed
        if (std::fabs(static_cast<double>(*at - target)) < slack ||
            (at != running.begin() && std::fabs(static_cast<double>(target - *(at - 1))) < slack)) {
          continue;
        }
        ASSERT_EQ(got, at - running.begin()) << "n " << n << " t " << t << " draw " << draw;
        ++checked;
      }
      EXPECT_GT(checked, 150) << "n " << n << " t " << t;
    }
  }
}

}  // namespace
}  // namespace swiftlet
