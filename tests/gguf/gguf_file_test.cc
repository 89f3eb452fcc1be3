#include "gguf/gguf_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <numeric>

#include "gguf/gguf_bytes.h"
#include "gguf/gguf_writer.h"
#include "gguf/malformed_corpus.h"

namespace swiftlet {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(GgufFileTest, ParsesHandBuiltFile) {
  std::vector<uint8_t> bytes = testing::ValidGguf();
  auto file = GgufFile::Parse(bytes, "valid.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  ASSERT_EQ(f.metadata().size(), 2u);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  auto ids = f.GetArray("test.ids");
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ((*ids)->array_type(), GgufType::kUint32);
  ASSERT_EQ((*ids)->array_size(), 3u);
  EXPECT_EQ((*ids)->ArrayInt64(2), 3);

  ASSERT_EQ(f.tensors().size(), 2u);
  const GgufTensor* a = f.FindTensor("a.weight");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, TensorType::kF32);
  EXPECT_EQ(a->n_dims, 2);
  EXPECT_EQ(a->ne[0], 8);
  EXPECT_EQ(a->ne[1], 2);
  EXPECT_EQ(a->n_elements, 16u);
  EXPECT_EQ(a->n_bytes, 64u);
  const GgufTensor* b = f.FindTensor("b.weight");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->type, TensorType::kQ8_0);
  EXPECT_EQ(b->n_bytes, 34u);
  // The data section starts at the first 32-byte boundary after the header
  // and the builder filled it with 0, 1, 2, ...
  EXPECT_EQ(f.data_offset() % 32, 0u);
  EXPECT_EQ(a->data, bytes.data() + f.data_offset());
  EXPECT_EQ(b->data[0], 64);
  EXPECT_EQ(b->data[33], 97);
}

TEST(GgufFileTest, AcceptsVersion2) {
  testing::GgufBytes b;
  b.Preamble(0, 1, 2).Str("general.architecture").U32(8).Str("qwen2");
  auto file = GgufFile::Parse(b.bytes(), "v2.gguf");
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ((*file)->version(), 2u);
}

TEST(GgufFileTest, WriterRoundTripsEveryValueTypeAndTensorData) {
  GgufWriter w(64);
  w.Set("u8", GgufValue::Uint8(200));
  w.Set("i8", GgufValue::Int8(-100));
  w.Set("u16", GgufValue::Uint16(60000));
  w.Set("i16", GgufValue::Int16(-30000));
  w.Set("u32", GgufValue::Uint32(4000000000u));
  w.Set("i32", GgufValue::Int32(-2000000000));
  w.Set("u64", GgufValue::Uint64(uint64_t{1} << 60));
  w.Set("i64", GgufValue::Int64(-(int64_t{1} << 60)));
  w.Set("f32", GgufValue::Float32(0.25f));
  w.Set("f64", GgufValue::Float64(-1e300));
  w.Set("bool", GgufValue::Bool(true));
  w.Set("str", GgufValue::String("héllo 世界"));
  w.Set("strs", GgufValue::StringArray({"a", "", "<s>"}));
  std::vector<float> scores = {0.5f, -1.0f};
  w.Set("scores", GgufValue::Array<float>(GgufType::kFloat32, scores));
  w.Set("u32", GgufValue::Uint32(7));  // Replaces, keeps its position.

  std::vector<float> t1(3 * 5);
  std::iota(t1.begin(), t1.end(), 1.0f);
  const std::vector<int64_t> shape1 = {3, 5};
  ASSERT_TRUE(w.AddTensor("t1", TensorType::kF32, shape1, [&](std::span<uint8_t> out) {
                 EXPECT_EQ(out.size(), t1.size() * 4);
                 std::memcpy(out.data(), t1.data(), out.size());
                 return absl::OkStatus();
               }).ok());
  const std::vector<int64_t> shape2 = {64, 2, 1, 3};
  ASSERT_TRUE(w.AddTensor("t2", TensorType::kQ4_K, std::vector<int64_t>{256, 2},
                          [](std::span<uint8_t> out) {
                            for (size_t i = 0; i < out.size(); ++i) out[i] = uint8_t(i * 7);
                            return absl::OkStatus();
                          }).ok());
  ASSERT_TRUE(w.AddTensor("t3", TensorType::kF16, shape2, [](std::span<uint8_t> out) {
                 std::fill(out.begin(), out.end(), 0xAB);
                 return absl::OkStatus();
               }).ok());
  EXPECT_FALSE(w.AddTensor("t1", TensorType::kF32, shape1, nullptr).ok());
  EXPECT_FALSE(w.AddTensor("bad", TensorType::kQ8_0, std::vector<int64_t>{33}, nullptr).ok());

  auto bytes = w.WriteToBuffer();
  ASSERT_TRUE(bytes.ok());
  auto parsed = GgufFile::Parse(*bytes, "mem.gguf");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const GgufFile& f = **parsed;
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.metadata()[0].key, "general.alignment");
  EXPECT_EQ(*f.GetInt("u8"), 200);
  EXPECT_EQ(*f.GetInt("i8"), -100);
  EXPECT_EQ(*f.GetInt("u16"), 60000);
  EXPECT_EQ(*f.GetInt("i16"), -30000);
  EXPECT_EQ(*f.GetInt("u32"), 7);
  EXPECT_EQ(f.Find("u32")->type(), GgufType::kUint32);
  EXPECT_EQ(*f.GetInt("i32"), -2000000000);
  EXPECT_EQ(*f.GetInt("u64"), int64_t{1} << 60);
  EXPECT_EQ(*f.GetInt("i64"), -(int64_t{1} << 60));
  EXPECT_EQ(*f.GetFloat("f32"), 0.25);
  EXPECT_EQ(*f.GetFloat("f64"), -1e300);
  EXPECT_EQ(*f.GetBool("bool"), true);
  EXPECT_EQ(*f.GetString("str"), "héllo 世界");
  EXPECT_THAT(f.Find("strs")->strings(), ::testing::ElementsAre("a", "", "<s>"));
  EXPECT_EQ(f.Find("scores")->ArrayDouble(1), -1.0);

  ASSERT_EQ(f.tensors().size(), 3u);
  const GgufTensor* r1 = f.FindTensor("t1");
  ASSERT_NE(r1, nullptr);
  EXPECT_EQ(0, std::memcmp(r1->data, t1.data(), t1.size() * 4));
  const GgufTensor* r2 = f.FindTensor("t2");
  EXPECT_EQ(r2->n_bytes, 2u * 144);
  EXPECT_EQ(r2->offset % 64, 0u);
  EXPECT_EQ(r2->data[5], uint8_t(35));
  const GgufTensor* r3 = f.FindTensor("t3");
  EXPECT_EQ(r3->n_dims, 4);
  EXPECT_EQ(r3->ne[3], 3);
  EXPECT_EQ(r3->n_bytes, 64u * 2 * 3 * 2);
  EXPECT_EQ(r3->data[r3->n_bytes - 1], 0xAB);
}

TEST(GgufFileTest, WriteFileThenOpenMapsTheFile) {
  const std::string path = ::testing::TempDir() + "/roundtrip.gguf";
  GgufWriter w;
  w.Set("general.architecture", GgufValue::String("llama"));
  std::vector<int64_t> shape = {32};
  ASSERT_TRUE(w.AddTensor("x", TensorType::kQ8_0, shape, [](std::span<uint8_t> out) {
                 out[0] = 42;
                 return absl::OkStatus();
               }).ok());
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ((*f)->FindTensor("x")->data[0], 42);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(GgufFileTest, FillErrorLeavesNoFile) {
  const std::string path = ::testing::TempDir() + "/failed.gguf";
  GgufWriter w;
  std::vector<int64_t> shape = {4};
  ASSERT_TRUE(w.AddTensor("x", TensorType::kF32, shape, [](std::span<uint8_t>) {
                 return absl::InternalError("boom");
               }).ok());
  EXPECT_EQ(w.WriteFile(path).message(), "boom");
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(GgufFileTest, MissingFileNamesThePath) {
  auto f = GgufFile::Open("/nonexistent/model.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(f.status().message()), StartsWith("/nonexistent/model.gguf: "));
}

TEST(GgufFileTest, TypedGettersNameKeyAndType) {
  std::vector<uint8_t> bytes = testing::ValidGguf();
  auto f = GgufFile::Parse(bytes, "m.gguf");
  ASSERT_TRUE(f.ok());
  auto missing = (*f)->GetInt("llama.block_count");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()), HasSubstr("'llama.block_count' is missing"));
  auto wrong = (*f)->GetInt("general.architecture");
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("'general.architecture' should be an integer but is string"));
}

TEST(GgufFileTest, EveryMalformedFileIsAOneLineErrorNamingTheFile) {
  const auto corpus = testing::MalformedCorpus();
  ASSERT_GT(corpus.size(), 200u);  // Truncations alone are one per byte.
  for (const testing::MalformedGguf& c : corpus) {
    SCOPED_TRACE(c.name);
    auto f = GgufFile::Parse(c.bytes, c.name + ".gguf");
    ASSERT_FALSE(f.ok());
    const std::string message(f.status().message());
    EXPECT_THAT(message, StartsWith(c.name + ".gguf: "));
    EXPECT_THAT(message, HasSubstr(c.expected_error));
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

TEST(GgufFileTest, TruncationsNameWhatIsMissing) {
  const std::vector<uint8_t> valid = testing::ValidGguf();
  auto full = GgufFile::Parse(valid, "full.gguf");
  ASSERT_TRUE(full.ok());
  // Cut inside the header: the message says truncated; cut inside the data:
  // it names the tensor whose bytes are missing.
  for (size_t n = 4; n < valid.size(); ++n) {
    std::span<const uint8_t> cut(valid.data(), n);
    auto f = GgufFile::Parse(cut, "cut.gguf");
    ASSERT_FALSE(f.ok()) << n;
    const std::string message(f.status().message());
    if (n < (*full)->data_offset()) {
      EXPECT_TRUE(message.find("truncated") != std::string::npos ||
                  message.find("cannot fit") != std::string::npos ||
                  message.find("past the end") != std::string::npos)
          << n << ": " << message;
    } else {
      EXPECT_THAT(message, HasSubstr("past the end of the file")) << n;
    }
  }
}

}  // namespace
}  // namespace swiftlet
