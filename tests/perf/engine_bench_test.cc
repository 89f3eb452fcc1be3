#include "perf/engine_bench.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <memory>

#include "gguf/gguf_file.h"
#include "model/model.h"
#include "model/model_config.h"
#include "model/quant_rules.h"
#include "model/random_model.h"
#include "perf/median.h"

namespace swiftlet {
namespace {

using ::testing::HasSubstr;

// The file (for counting independently of the code under test) and the
// model loaded from it (what ComputeModelCost counts).
struct Opened {
  std::unique_ptr<GgufFile> file;
  ModelConfig config;
  std::unique_ptr<Model> model;
};

Opened WriteAndOpen(const RandomModelSpec& spec, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/engine_bench_" + name + "." + std::to_string(::getpid()) + ".gguf";
  absl::Status s = WriteRandomModel(spec, path, 2);
  EXPECT_TRUE(s.ok()) << s;
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status();
  Opened o;
  if (!f.ok()) return o;
  o.file = std::move(*f);
  auto c = ReadModelConfig(*o.file);
  EXPECT_TRUE(c.ok()) << c.status();
  if (c.ok()) o.config = *c;
  auto m = Model::Load(path);
  EXPECT_TRUE(m.ok()) << m.status();
  if (m.ok()) o.model = std::move(*m);
  return o;
}

RandomModelSpec SmallSpec(const char* type, bool tied) {
  RandomModelSpec spec;
  spec.n_embd = 64;
  spec.n_layer = 3;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 96;
  spec.n_ctx = 256;
  spec.tied_embeddings = tied;
  spec.weights = *ParseQuantTarget(type);
  return spec;
}

// Multiply-adds per token of the matrices, from the shape alone:
// per layer wq [E x Q], wk and wv [E x KV], wo [Q x E], gate and up [E x F],
// down [F x E]; then the head [E x vocab].
uint64_t MatrixElements(const RandomModelSpec& s, int64_t n_vocab) {
  const int64_t head_dim = s.n_embd / s.n_head;
  const int64_t q = s.n_head * head_dim, kv = s.n_head_kv * head_dim;
  const int64_t layer = s.n_embd * q + 2 * s.n_embd * kv + q * s.n_embd + 3 * s.n_embd * s.n_ff;
  return static_cast<uint64_t>(s.n_layer * layer + s.n_embd * n_vocab);
}

TEST(ModelCostTest, CountsEveryMatrixATokenStreamsFromTheShapes) {
  for (bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    const RandomModelSpec spec = SmallSpec("Q8_0", tied);
    Opened m = WriteAndOpen(spec, tied ? "q8_tied" : "q8");
    ASSERT_NE(m.file, nullptr);
    ASSERT_NE(m.model, nullptr);
    auto cost = ComputeModelCost(*m.model);
    ASSERT_TRUE(cost.ok()) << cost.status();
    const uint64_t elements = MatrixElements(spec, m.config.n_vocab);
    // Q8_0: 34 bytes (an F16 scale and 32 int8) per 32 weights.
    EXPECT_EQ(cost->weight_bytes_per_token, elements / 32 * 34);
    EXPECT_EQ(cost->int8_macs_per_token, elements);
    EXPECT_EQ(cost->float_macs_per_token, 0u);
    const uint64_t head_dim = spec.n_embd / spec.n_head;
    EXPECT_EQ(cost->attn_macs_per_position, spec.n_layer * 2 * spec.n_head * head_dim);
    // Parameters: the matrices, an untied embedding table, and the norms
    // (two per layer and the output norm, n_embd each).
    const uint64_t norms = (2 * spec.n_layer + 1) * spec.n_embd;
    const uint64_t embedding = tied ? 0 : spec.n_embd * m.config.n_vocab;
    EXPECT_EQ(cost->n_params, elements + embedding + norms);
  }
}

TEST(ModelCostTest, AgreesWithTheFilesTensorTable) {
  // The same sum taken straight from the file by tensor name.
  // Rows of 256 and 512, so the K-quants apply and the file mixes Q4_K,
  // Q6_K and F32.
  RandomModelSpec spec = SmallSpec("Q4_K_M", false);
  spec.n_embd = 256;
  spec.n_ff = 512;
  Opened m = WriteAndOpen(spec, "q4km");
  ASSERT_NE(m.file, nullptr);
  ASSERT_NE(m.model, nullptr);
  // blk.N.<matrix>.weight for the seven per-layer matrices, or output.weight.
  // (Plain string checks: std::regex trips a GCC 12 false warning under ASan.)
  auto streamed = [](const std::string& name) {
    if (name == "output.weight") return true;
    if (name.rfind("blk.", 0) != 0) return false;
    const size_t dot = name.find('.', 4);
    if (dot == std::string::npos || dot == 4) return false;
    for (size_t i = 4; i < dot; ++i) {
      if (name[i] < '0' || name[i] > '9') return false;
    }
    const std::string rest = name.substr(dot + 1);
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      if (rest == std::string(m) + ".weight") return true;
    }
    return false;
  };
  uint64_t bytes = 0, tensors = 0;
  for (const GgufTensor& t : m.file->tensors()) {
    if (streamed(t.name)) {
      bytes += t.n_bytes;
      ++tensors;
    }
  }
  EXPECT_EQ(tensors, 7u * spec.n_layer + 1);
  auto cost = ComputeModelCost(*m.model);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(cost->weight_bytes_per_token, bytes);
  uint64_t types_bytes = 0;
  for (const TensorTypeTotal& t : cost->types) types_bytes += t.bytes;
  uint64_t file_bytes = 0;
  for (const GgufTensor& t : m.file->tensors()) file_bytes += t.n_bytes;
  EXPECT_EQ(types_bytes, file_bytes);
}

TEST(ModelCostTest, FloatWeightsCountAtTheFloatPeak) {
  const RandomModelSpec spec = SmallSpec("F16", false);
  Opened m = WriteAndOpen(spec, "f16");
  ASSERT_NE(m.file, nullptr);
  ASSERT_NE(m.model, nullptr);
  auto cost = ComputeModelCost(*m.model);
  ASSERT_TRUE(cost.ok()) << cost.status();
  const uint64_t elements = MatrixElements(spec, m.config.n_vocab);
  EXPECT_EQ(cost->weight_bytes_per_token, 2 * elements);
  EXPECT_EQ(cost->float_macs_per_token, elements);
  EXPECT_EQ(cost->int8_macs_per_token, 0u);
}

TEST(LimitsTest, MemoryBoundIsBandwidthOverBytesTimesTokensPerPass) {
  EXPECT_DOUBLE_EQ(MemoryBoundTokS(30.0, 1'000'000'000, 1), 30.0);
  EXPECT_DOUBLE_EQ(MemoryBoundTokS(30.0, 500'000'000, 16), 960.0);
  EXPECT_EQ(MemoryBoundTokS(30.0, 0, 1), 0.0);
}

TEST(LimitsTest, ComputeBoundAddsTheTimeAtEachPeak) {
  ModelCost cost;
  cost.int8_macs_per_token = 1'000'000'000;  // 2e9 ops at 500 GOPS: 4 ms
  EXPECT_NEAR(ComputeBoundTokS(cost, 500, 200, 0), 250.0, 1e-9);
  // Plus 2 x (1e8 + 1e6 x 100) = 4e8 float ops at 200 GFLOPS: 2 ms more.
  cost.float_macs_per_token = 100'000'000;
  cost.attn_macs_per_position = 1'000'000;
  EXPECT_NEAR(ComputeBoundTokS(cost, 500, 200, 100), 1.0 / 0.006, 1e-9);
  EXPECT_EQ(ComputeBoundTokS(cost, 0, 200, 100), 0.0);
  ModelCost float_only;
  float_only.float_macs_per_token = 50'000'000;  // 1e8 flops at 100 GFLOPS: 1 ms
  EXPECT_NEAR(ComputeBoundTokS(float_only, 0, 100, 0), 1000.0, 1e-9);
}

TEST(LimitsTest, RooflineTakesTheLowerBound) {
  const Roofline memory = RooflineLimit(30, 250);
  EXPECT_EQ(memory.tok_s, 30);
  EXPECT_FALSE(memory.compute_bound);
  const Roofline compute = RooflineLimit(480, 250);
  EXPECT_EQ(compute.tok_s, 250);
  EXPECT_TRUE(compute.compute_bound);
}

TEST(LimitsTest, PercentAndMedian) {
  EXPECT_DOUBLE_EQ(PercentOfLimit(15, 30), 50.0);
  EXPECT_DOUBLE_EQ(PercentOfLimit(45, 30), 150.0);
  EXPECT_EQ(PercentOfLimit(15, 0), 0.0);
  EXPECT_EQ(Median({3, 1, 2}), 2);
  EXPECT_EQ(Median({4, 1, 3, 2}), 2.5);
  EXPECT_EQ(Median({7}), 7);
  EXPECT_EQ(Median({}), 0);
}

ModelConfig PlanConfig() {
  ModelConfig c;
  c.n_vocab = 1000;
  c.n_ctx_train = 512;
  c.n_embd = 64;
  c.n_layer = 2;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 16;
  c.n_ff = 128;
  return c;
}

TEST(PlanTest, NamesTestsAndSizesTheCache) {
  EngineBenchOptions o;
  o.prompt_tokens = 100;
  o.gen_tokens = 20;
  o.batch_sizes = {1, 4, 4, 2};
  auto plan = PlanEngineBench(o, PlanConfig());
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::vector<std::string> names;
  for (const EngineBenchTest& t : plan->tests) names.push_back(t.name);
  EXPECT_THAT(names, ::testing::ElementsAre("pp100", "tg20", "tg20@b4", "tg20@b2"));
  EXPECT_EQ(plan->n_slots, 4);
  EXPECT_EQ(plan->n_ctx, 100 + 20 + 16);
  EXPECT_EQ(plan->short_prompt, kShortPrompt);
  // 2 layers x 4 slots x 136 positions x (K, V) x 32 values x 2 bytes.
  EXPECT_EQ(plan->kv_bytes, 2u * 4 * 136 * 2 * 32 * 2);
  const EngineBenchTest& pp = plan->tests[0];
  EXPECT_TRUE(pp.prompt);
  EXPECT_EQ(pp.tokens_per_pass, 100);
  EXPECT_DOUBLE_EQ(pp.mean_context, 50.5);  // Positions 0..99 attend 1..100.
  const EngineBenchTest& b4 = plan->tests[2];
  EXPECT_FALSE(b4.prompt);
  EXPECT_EQ(b4.batch, 4);
  EXPECT_EQ(b4.tokens_per_pass, 4);
  EXPECT_DOUBLE_EQ(b4.mean_context, 8 + 10.5);  // Positions 8..27 attend 9..28.
}

TEST(PlanTest, ClampsTheContextToTheModels) {
  EngineBenchOptions o;
  o.prompt_tokens = 512;
  o.gen_tokens = 64;
  o.batch_sizes = {1};
  auto plan = PlanEngineBench(o, PlanConfig());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->n_ctx, 512);
}

TEST(PlanTest, RefusesBadOptionsNamingTheFlag) {
  const ModelConfig c = PlanConfig();
  auto error = [&](auto edit) {
    EngineBenchOptions o;
    o.batch_sizes = {1, 2};
    edit(o);
    auto plan = PlanEngineBench(o, c);
    return plan.ok() ? std::string("ok") : std::string(plan.status().message());
  };
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.prompt_tokens = 513; }),
              HasSubstr("--prompt-tokens"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.prompt_tokens = 0; }),
              HasSubstr("--prompt-tokens"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.gen_tokens = 512; }), HasSubstr("--gen-tokens"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.gen_tokens = kMaxGenTokens + 1; }),
              HasSubstr("--gen-tokens"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.batch_sizes = {1, 0}; }), HasSubstr("--batch"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.batch_sizes = {kMaxBatch + 1}; }),
              HasSubstr("--batch"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.batch_sizes.clear(); }), HasSubstr("--batch"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.repeat = 0; }), HasSubstr("--repeat"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.sampling.temperature = -1; }), HasSubstr("temperature"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.sampling.temperature = NAN; }), HasSubstr("temperature"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.sampling.top_p = 0; }), HasSubstr("top_p"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.sampling.min_p = 1.5f; }), HasSubstr("min_p"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.sampling.top_k = -1; }), HasSubstr("top_k"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.repeat = kMaxRepeat + 1; }),
              HasSubstr("--repeat"));
  EXPECT_THAT(error([](EngineBenchOptions& o) { o.max_memory_bytes = 1 << 16; }),
              HasSubstr("lower --batch"));
  EXPECT_EQ(error([](EngineBenchOptions&) {}), "ok");
}

}  // namespace
}  // namespace swiftlet
