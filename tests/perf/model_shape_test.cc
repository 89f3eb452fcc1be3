#include "perf/model_shape.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "model/quant_rules.h"
#include "model/random_model.h"

namespace swiftlet {
namespace {

using ::testing::HasSubstr;

ModelShape TinyLlama() {
  ModelShape s;
  s.arch = "llama";
  s.n_vocab = 32000;
  s.n_ctx_train = 2048;
  s.n_embd = 2048;
  s.n_layer = 22;
  s.n_head = 32;
  s.n_head_kv = 4;
  s.head_dim = 64;
  s.n_ff = 5632;
  return s;
}

TEST(ModelShapeTest, TinyLlamaHasItsPublishedParameterCount) {
  // TinyLlama-1.1B's model card: 1,100,048,384 parameters.
  auto f16 = SizeModelShape(TinyLlama(), "F16");
  ASSERT_TRUE(f16.ok()) << f16.status();
  EXPECT_EQ(f16->cost.n_params, 1'100'048'384u);
  // Norms (2 per layer + the output norm, 2048 wide) stay F32; the rest F16.
  const uint64_t norms = (2 * 22 + 1) * 2048;
  EXPECT_EQ(f16->weights_bytes, (1'100'048'384u - norms) * 2 + norms * 4);
  EXPECT_EQ(f16->file_bytes, f16->weights_bytes);
  EXPECT_EQ(f16->weight_format, "F16");
  EXPECT_EQ(f16->cost.int8_macs_per_token, 0u);
}

TEST(ModelShapeTest, TinyLlamaQ8_0ByHand) {
  auto q8 = SizeModelShape(TinyLlama(), "q8_0");
  ASSERT_TRUE(q8.ok()) << q8.status();
  // 2-D weights: 1,100,048,384 - 92,160 norm elements = 1,099,956,224, at 34
  // bytes per 32; norms 92,160 x 4 bytes.
  EXPECT_EQ(q8->weights_bytes, 1'099'956'224u / 32 * 34 + 92'160u * 4);
  // Streamed per token: every 2-D weight but the (untied) embedding table,
  // 32000 x 2048 = 65,536,000 elements.
  EXPECT_EQ(q8->cost.weight_bytes_per_token, (1'099'956'224u - 65'536'000u) / 32 * 34);
  EXPECT_EQ(q8->cost.int8_macs_per_token, 1'099'956'224u - 65'536'000u);
  // 22 layers x 2 (QK^T and PV) x 32 heads x 64.
  EXPECT_EQ(q8->cost.attn_macs_per_position, 22u * 2 * 32 * 64);
}

TEST(ModelShapeTest, AFileCountsAsItsShapeDoes) {
  RandomModelSpec spec;
  spec.n_embd = 256;
  spec.n_layer = 2;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 512;
  spec.n_ctx = 512;
  spec.weights = *ParseQuantTarget("Q4_K_M");
  const std::string path =
      ::testing::TempDir() + "/model_shape_" + std::to_string(::getpid()) + ".gguf";
  ASSERT_TRUE(WriteRandomModel(spec, path, 1).ok());
  auto file = SizeModelFile(path);
  ASSERT_TRUE(file.ok()) << file.status();
  auto shape = SizeModelShape(file->shape, "Q4_K_M");
  ASSERT_TRUE(shape.ok()) << shape.status();
  EXPECT_EQ(file->shape.n_layer, 2);
  EXPECT_EQ(file->shape.head_dim, 64);
  EXPECT_EQ(file->weights_bytes, shape->weights_bytes);
  EXPECT_EQ(file->cost.weight_bytes_per_token, shape->cost.weight_bytes_per_token);
  EXPECT_EQ(file->cost.int8_macs_per_token, shape->cost.int8_macs_per_token);
  EXPECT_EQ(file->cost.n_params, shape->cost.n_params);
  // The file holds the header and vocabulary too.
  EXPECT_GT(file->file_bytes, file->weights_bytes);
  std::remove(path.c_str());
}

TEST(ModelShapeTest, RejectsBadShapesAndFiles) {
  ModelShape s = TinyLlama();
  s.n_head_kv = 5;
  EXPECT_THAT(CheckModelShape(s).message(), HasSubstr("not a multiple of n_head_kv"));
  s = TinyLlama();
  s.n_layer = 0;
  EXPECT_THAT(CheckModelShape(s).message(), HasSubstr("n_layer = 0"));
  s = TinyLlama();
  s.arch = "gpt2";
  EXPECT_FALSE(CheckModelShape(s).ok());
  s = TinyLlama();
  s.head_dim = 63;
  EXPECT_FALSE(CheckModelShape(s).ok());
  EXPECT_FALSE(SizeModelShape(TinyLlama(), "Q3_XYZ").ok());

  const std::string path = ::testing::TempDir() + "/not_gguf_" + std::to_string(::getpid());
  std::ofstream(path) << "definitely not a model";
  auto r = SizeModelFile(path);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr(path));
  std::remove(path.c_str());
  EXPECT_FALSE(SizeModelFile("/nonexistent/model.gguf").ok());
}

}  // namespace
}  // namespace swiftlet
