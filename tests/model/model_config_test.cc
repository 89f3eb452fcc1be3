#include "model/model_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <set>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "model/random_model.h"
#include "model/tensor_layout.h"

namespace swiftlet {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<GgufFile> WriteAndOpen(const RandomModelSpec& spec, const std::string& name) {
  const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
  absl::Status s = WriteRandomModel(spec, path, 2);
  EXPECT_TRUE(s.ok()) << s;
  auto f = GgufFile::Open(path);
  EXPECT_TRUE(f.ok()) << f.status();
  // The open file stays mapped; the 7B preset's copy is 200+ MB of disk.
  std::remove(path.c_str());
  return f.ok() ? std::move(*f) : nullptr;
}

TEST(ModelConfigTest, ReadsEveryPresetShape) {
  struct Case {
    const char* preset;
    Architecture arch;
    int64_t n_embd, n_head, n_head_kv, head_dim, n_ff;
    bool tied;
  };
  for (const Case& c : {Case{"tinyllama-1.1b", Architecture::kLlama, 2048, 32, 4, 64, 5632, false},
                        Case{"smollm2-135m", Architecture::kLlama, 576, 9, 3, 64, 1536, true},
                        Case{"qwen2.5-0.5b", Architecture::kQwen2, 896, 14, 2, 64, 4864, true},
                        Case{"qwen3-0.6b", Architecture::kQwen3, 1024, 16, 8, 128, 3072, true},
                        Case{"llama2-7b", Architecture::kLlama, 4096, 32, 32, 128, 11008, false}}) {
    SCOPED_TRACE(c.preset);
    auto spec = RandomModelPreset(c.preset);
    ASSERT_TRUE(spec.ok());
    spec->n_layer = 1;  // The full depth is the same tensors repeated.
    spec->weights = *ParseQuantTarget("Q8_0");
    auto f = WriteAndOpen(*spec, c.preset);
    ASSERT_NE(f, nullptr);
    auto config = ReadModelConfig(*f);
    ASSERT_TRUE(config.ok()) << config.status();
    EXPECT_EQ(config->arch, c.arch);
    EXPECT_EQ(config->n_embd, c.n_embd);
    EXPECT_EQ(config->n_layer, 1);
    EXPECT_EQ(config->n_head, c.n_head);
    EXPECT_EQ(config->n_head_kv, c.n_head_kv);
    EXPECT_EQ(config->head_dim, c.head_dim);
    EXPECT_EQ(config->n_ff, c.n_ff);
    EXPECT_EQ(config->tied_embeddings, c.tied);
    EXPECT_EQ(config->qkv_bias, c.arch == Architecture::kQwen2);
    EXPECT_EQ(config->qk_norm, c.arch == Architecture::kQwen3);
    EXPECT_EQ(config->rope_neox, c.arch != Architecture::kLlama);
    EXPECT_EQ(config->n_vocab, 447);  // The synthetic vocabulary.
    EXPECT_TRUE(ValidateTensors(*config, *f).ok());
  }
}

TEST(ModelConfigTest, SyntheticVocabularyPaddedToASize) {
  RandomModelSpec spec;
  spec.n_layer = 1;
  spec.vocab_size = 32000;  // Llama 2's.
  auto f = WriteAndOpen(spec, "vocab32000");
  ASSERT_NE(f, nullptr);
  auto config = ReadModelConfig(*f);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->n_vocab, 32000);
  EXPECT_TRUE(ValidateTensors(*config, *f).ok());
  auto tokens = f->GetArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ((*tokens)->array_size(), 32000u);

  // The largest: every token's text its own, though three-character
  // pieces run through "<s>" (a narrow model keeps the file small).
  RandomModelSpec largest;
  largest.n_embd = 8, largest.n_head = 2, largest.n_head_kv = 1, largest.n_ff = 8, largest.n_layer = 1;
  largest.vocab_size = kMaxSyntheticVocab;
  auto big = WriteAndOpen(largest, "vocab-largest");
  ASSERT_NE(big, nullptr);
  auto big_tokens = big->GetArray("tokenizer.ggml.tokens");
  ASSERT_TRUE(big_tokens.ok());
  const std::vector<std::string>& texts = (*big_tokens)->strings();
  ASSERT_EQ(static_cast<int64_t>(texts.size()), kMaxSyntheticVocab);
  EXPECT_EQ(std::set<std::string>(texts.begin(), texts.end()).size(), texts.size());

  for (int64_t bad : {int64_t{1}, kSyntheticVocabBase - 1, kMaxSyntheticVocab + 1}) {
    spec.vocab_size = bad;
    const absl::Status s = WriteRandomModel(spec, ::testing::TempDir() + "/bad.gguf", 1);
    EXPECT_THAT(s.message(), HasSubstr("--vocab-size")) << bad;
  }
  spec.vocab_size = 1000;
  spec.vocab_path = "/some/vocab.gguf";
  EXPECT_THAT(WriteRandomModel(spec, ::testing::TempDir() + "/bad.gguf", 1).message(),
              HasSubstr("not with --vocab"));
}

// A file with valid llama metadata for a 1-layer, 64-wide model and the
// tensors given.
std::vector<uint8_t> LlamaFile(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors,
                               const std::string& arch = "llama",
                               const std::function<void(GgufWriter&)>& extra = nullptr) {
  GgufWriter w;
  if (extra) extra(w);
  w.Set("general.architecture", GgufValue::String(arch));
  const std::string p = arch + ".";
  w.Set(p + "context_length", GgufValue::Uint32(128));
  w.Set(p + "embedding_length", GgufValue::Uint32(64));
  w.Set(p + "block_count", GgufValue::Uint32(1));
  w.Set(p + "feed_forward_length", GgufValue::Uint32(96));
  w.Set(p + "attention.head_count", GgufValue::Uint32(4));
  w.Set(p + "attention.head_count_kv", GgufValue::Uint32(2));
  w.Set(p + "vocab_size", GgufValue::Uint32(100));
  for (const auto& [name, shape] : tensors) {
    EXPECT_TRUE(w.AddTensor(name, TensorType::kF32, shape, [](std::span<uint8_t>) {
                   return absl::OkStatus();
                 }).ok());
  }
  return *w.WriteToBuffer();
}

std::vector<std::pair<std::string, std::vector<int64_t>>> GoodTensors() {
  return {{"token_embd.weight", {64, 100}},   {"blk.0.attn_norm.weight", {64}},
          {"blk.0.attn_q.weight", {64, 64}},  {"blk.0.attn_k.weight", {64, 32}},
          {"blk.0.attn_v.weight", {64, 32}},  {"blk.0.attn_output.weight", {64, 64}},
          {"blk.0.ffn_norm.weight", {64}},    {"blk.0.ffn_gate.weight", {64, 96}},
          {"blk.0.ffn_up.weight", {64, 96}},  {"blk.0.ffn_down.weight", {96, 64}},
          {"output_norm.weight", {64}},       {"output.weight", {64, 100}}};
}

TEST(ModelConfigTest, HandWrittenLayoutValidates) {
  auto bytes = LlamaFile(GoodTensors());
  auto f = GgufFile::Parse(bytes, "good.gguf");
  ASSERT_TRUE(f.ok()) << f.status();
  auto config = ReadModelConfig(**f);
  ASSERT_TRUE(config.ok()) << config.status();
  EXPECT_EQ(config->head_dim, 16);
  EXPECT_EQ(config->kv_dim(), 32);
  EXPECT_FALSE(config->tied_embeddings);
  EXPECT_TRUE(ValidateTensors(*config, **f).ok());
}

TEST(ModelConfigTest, ShapeThatDisagreesWithHyperparametersIsNamed) {
  auto tensors = GoodTensors();
  tensors[3].second = {64, 64};  // attn_k as if there were 4 KV heads.
  auto bytes = LlamaFile(tensors);
  auto f = GgufFile::Parse(bytes, "bad.gguf");
  ASSERT_TRUE(f.ok());
  auto config = ReadModelConfig(**f);
  ASSERT_TRUE(config.ok());
  absl::Status s = ValidateTensors(*config, **f);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("bad.gguf: tensor 'blk.0.attn_k.weight' has shape [64, 64], expected [64, 32]"));
}

TEST(ModelConfigTest, MissingTensorIsNamed) {
  auto tensors = GoodTensors();
  tensors.erase(tensors.begin() + 9);  // ffn_down
  auto bytes = LlamaFile(tensors);
  auto f = GgufFile::Parse(bytes, "missing.gguf");
  ASSERT_TRUE(f.ok());
  auto config = ReadModelConfig(**f);
  ASSERT_TRUE(config.ok());
  EXPECT_THAT(std::string(ValidateTensors(*config, **f).message()),
              HasSubstr("tensor 'blk.0.ffn_down.weight' is missing"));
}

TEST(ModelConfigTest, UnsupportedArchitectureAndBadCountsAreErrors) {
  auto bytes = LlamaFile(GoodTensors(), "gptj");
  auto f = GgufFile::Parse(bytes, "gptj.gguf");
  ASSERT_TRUE(f.ok());
  EXPECT_THAT(std::string(ReadModelConfig(**f).status().message()),
              HasSubstr("unsupported architecture 'gptj'"));

  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("llama"));
  w.Set("llama.embedding_length", GgufValue::Uint32(64));
  w.Set("llama.block_count", GgufValue::Uint32(0));
  auto zero = *w.WriteToBuffer();
  auto z = GgufFile::Parse(zero, "zero.gguf");
  ASSERT_TRUE(z.ok());
  EXPECT_THAT(std::string(ReadModelConfig(**z).status().message()),
              HasSubstr("'llama.block_count' = 0 is out of range"));
}

TEST(ModelConfigTest, PoolingTypeIsReadAsGiven) {
  auto pooling_of = [](const std::function<void(GgufWriter&)>& extra) {
    auto bytes = LlamaFile(GoodTensors(), "llama", extra);
    auto f = GgufFile::Parse(bytes, "pooling.gguf");
    EXPECT_TRUE(f.ok()) << f.status();
    auto config = ReadModelConfig(**f);
    EXPECT_TRUE(config.ok()) << config.status();
    return config.ok() ? config->pooling_type : -100;
  };
  EXPECT_EQ(pooling_of(nullptr), ModelConfig::kPoolingAbsent);
  for (uint32_t type : {0u, 1u, 2u, 3u, 4u}) {
    EXPECT_EQ(pooling_of([&](GgufWriter& w) { w.Set("llama.pooling_type", GgufValue::Uint32(type)); }),
              type);
  }
  EXPECT_EQ(pooling_of([](GgufWriter& w) { w.Set("llama.pooling_type", GgufValue::String("mean")); }),
            ModelConfig::kPoolingMalformed);
}

}  // namespace
}  // namespace swiftlet
