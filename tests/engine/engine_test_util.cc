#include "engine_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>

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

std::vector<int32_t> Prompt(uint32_t seed, size_t n) {
  std::mt19937 rng(seed);
  std::vector<int32_t> p(n);
  for (int32_t& t : p) t = static_cast<int32_t>(3 + rng() % 400);
  return p;
}


}  // namespace swiftlet
