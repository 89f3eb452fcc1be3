#include "engine_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

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

std::vector<int32_t> ReferenceGreedy(const std::vector<int32_t>& prompt, int n) {
  const Model& m = *TinyModel().model;
  const ModelConfig& c = m.config();
  auto cache = KvCache::Create({c.n_layer, c.kv_dim(), 1, 512, TensorType::kF16}, uint64_t{1} << 30);
  ForwardContext ctx(1);
  ForwardOutput out;
  Batch b;
  for (size_t i = 0; i < prompt.size(); ++i) b.Add(prompt[i], static_cast<int32_t>(i), 0, i + 1 == prompt.size());
  std::vector<int32_t> result;
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int step = 0; step < n; ++step) {
    EXPECT_TRUE(m.Forward(b, *cache, ctx, out).ok());
    const float* row = out.Row(0);
    int32_t best = 0;
    for (int32_t i = 1; i < c.n_vocab; ++i) best = row[i] > row[best] ? i : best;
    result.push_back(best);
    b = Batch();
    b.Add(best, pos++, 0, true);
  }
  return result;
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
