#include "engine_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <random>

#include "kv/kv_cache.h"
#include "model/forward_context.h"
#include "model/quant_rules.h"
#include "model/random_model.h"

namespace swiftlet {

const Loaded& TinyModel() {
  static Loaded* loaded = [] {
    RandomModelSpec spec = *RandomModelPreset("tiny");
    spec.n_embd = 128;
    spec.n_layer = 2;
    spec.n_head = 4;
    spec.n_head_kv = 2;
    spec.n_ff = 256;
    spec.n_ctx = 2048;
    spec.weights = *ParseQuantTarget("Q8_0");
    // ctest runs each test case as its own process, in parallel: one file
    // per process, or they overwrite each other's.
    const std::string path = ::testing::TempDir() + "/engine_tiny." + std::to_string(::getpid()) + ".gguf";
    EXPECT_TRUE(WriteRandomModel(spec, path, 2).ok());
    auto* l = new Loaded;
    auto m = Model::Load(path);
    EXPECT_TRUE(m.ok()) << m.status();
    l->model = std::move(*m);
    auto t = Tokenizer::FromGguf(l->model->file());
    EXPECT_TRUE(t.ok()) << t.status();
    l->tokenizer = std::move(*t);
    return l;
  }();
  return *loaded;
}

namespace {

// Decodes n tokens after `prompt` on a contiguous cache, each picked from
// the last row's logits by `pick(logits, tokens so far)`.
template <typename Pick>
std::vector<int32_t> ReferenceDecode(const std::vector<int32_t>& prompt, int n, Pick&& pick) {
  const Model& m = *TinyModel().model;
  const ModelConfig& c = m.config();
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 512, TensorType::kF16}, uint64_t{1} << 30);
  ForwardContext ctx(1);
  ForwardOutput out;
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  std::vector<int32_t> tokens = prompt;
  for (int step = 0; step < n; ++step) {
    EXPECT_TRUE(m.Forward(b, *cache, ctx, out).ok());
    std::vector<float> row(out.Row(0), out.Row(0) + c.n_vocab);
    const int32_t next = pick(row, tokens);
    tokens.push_back(next);
    b = Batch();
    b.Add(next, static_cast<int32_t>(tokens.size()) - 1, 0, true);
  }
  return {tokens.begin() + static_cast<std::ptrdiff_t>(prompt.size()), tokens.end()};
}

}  // namespace

std::vector<int32_t> ReferenceGreedy(const std::vector<int32_t>& prompt, int n) {
  return ReferenceDecode(prompt, n, [](const std::vector<float>& row, const std::vector<int32_t>&) {
    int32_t best = 0;
    for (int32_t i = 1; i < static_cast<int32_t>(row.size()); ++i) best = row[i] > row[best] ? i : best;
    return best;
  });
}

std::vector<int32_t> ReferenceSampled(const std::vector<int32_t>& prompt, int n, const SamplingParams& params,
                                      const std::vector<int32_t>& masked, int32_t top_logprobs,
                                      std::vector<TokenLogprobs>* logprobs) {
  Sampler sampler(params);
  return ReferenceDecode(prompt, n, [&](std::vector<float>& row, const std::vector<int32_t>& tokens) {
    const std::vector<float> raw = row;
    for (int32_t id : masked) row[static_cast<size_t>(id)] = -INFINITY;
    const int32_t id = sampler.Sample(row, tokens);
    std::vector<float> scratch;
    if (logprobs != nullptr) logprobs->push_back(ComputeLogprobs(raw, id, top_logprobs, scratch));
    return id;
  });
}

std::vector<int32_t> Prompt(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(n);
  for (int32_t& t : p) t = static_cast<int32_t>(3 + rng() % 400);
  return p;
}


void RunUntilIdle(Engine& e, int max_steps) {
  for (int steps = 0;; ++steps) {
    ASSERT_LT(steps, max_steps) << "engine stuck";
    const bool ran = e.StepForTesting();
    if (!ran && e.state().running + e.state().waiting == 0) return;
  }
}

}  // namespace swiftlet
