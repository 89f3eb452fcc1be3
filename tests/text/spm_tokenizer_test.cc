#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "text/vocab_vectors.h"

#include <cstdint>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "text/tokenizer.h"

namespace swiftlet {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

using testing::kVocabDir;
const std::string kLlamaSpmFile = "ggml-vocab-llama-spm.gguf";

using testing::AppendUtf8;
using testing::LoadVectors;
using testing::VectorCase;

using testing::LoadTokenizer;

using testing::Ids;

TEST(SpmTokenizerTest, MatchesLlamaCppVectors) {
  auto tokenizer = LoadTokenizer(kLlamaSpmFile);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<VectorCase> cases = LoadVectors(kVocabDir + kLlamaSpmFile);
  ASSERT_GT(cases.size(), 10u);
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tokenizer->Encode(cases[i].text, /*add_bos=*/false);
    EXPECT_EQ(got, cases[i].ids) << "case " << i << " text '" << cases[i].text
                                 << "'\n got: " << Ids(got) << "\nwant: " << Ids(cases[i].ids);
    if (got == cases[i].ids) ++passed;
  }
  EXPECT_EQ(cases.size(), 46u);
  std::cout << passed << " / " << cases.size() << " vector cases pass\n";
}

TEST(SpmTokenizerTest, VectorsRoundTrip) {
  auto tokenizer = LoadTokenizer(kLlamaSpmFile);
  ASSERT_NE(tokenizer, nullptr);
  for (const VectorCase& c : LoadVectors(kVocabDir + kLlamaSpmFile)) {
    EXPECT_EQ(tokenizer->Decode(tokenizer->Encode(c.text, false)), c.text);
    EXPECT_EQ(tokenizer->Decode(tokenizer->Encode(c.text, true)), c.text);
  }
}

TEST(SpmTokenizerTest, RandomUtf8RoundTrips) {
  auto tokenizer = LoadTokenizer(kLlamaSpmFile);
  ASSERT_NE(tokenizer, nullptr);
  std::mt19937 rng(1234);
  for (int iter = 0; iter < 300; ++iter) {
    std::string text;
    const int n = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int i = 0; i < n; ++i) {
      switch (std::uniform_int_distribution<int>(0, 5)(rng)) {
        case 0:
        case 1:
          AppendUtf8(text, std::uniform_int_distribution<uint32_t>(0x20, 0x7e)(rng));
          break;
        case 2:
          AppendUtf8(text, std::uniform_int_distribution<uint32_t>(0x4e00, 0x9fff)(rng));
          break;
        case 3:
          AppendUtf8(text, std::uniform_int_distribution<uint32_t>(0x1f300, 0x1faff)(rng));
          break;
        case 4:
          AppendUtf8(text, std::uniform_int_distribution<uint32_t>(0xa0, 0x24ff)(rng));
          break;
        default:
          text += " \n\t"[std::uniform_int_distribution<int>(0, 2)(rng)];
          break;
      }
    }
    const std::vector<int32_t> ids = tokenizer->Encode(text, iter % 2 == 0);
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tokenizer->n_vocab());
    }
    EXPECT_EQ(tokenizer->Decode(ids), text) << "iteration " << iter;
  }
}

TEST(SpmTokenizerTest, InvalidUtf8RoundTripsAsBytes) {
  auto tokenizer = LoadTokenizer(kLlamaSpmFile);
  ASSERT_NE(tokenizer, nullptr);
  const std::string text = "a\xff\xc3 b\xe2\x82 \x80z\xf0\x9f";
  EXPECT_EQ(tokenizer->Decode(tokenizer->Encode(text, false)), text);
}

TEST(SpmTokenizerTest, ControlTokenTextStaysText) {
  auto tokenizer = LoadTokenizer(kLlamaSpmFile);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->bos_id(), 1);
  EXPECT_EQ(tokenizer->eos_id(), 2);
  for (const std::string text : {"<s>", "</s>", "hi</s><s>there", "<unk>", "<0x41>"}) {
    const std::vector<int32_t> ids = tokenizer->Encode(text, false);
    for (int32_t id : ids) {
      EXPECT_NE(id, tokenizer->bos_id()) << text;
      EXPECT_NE(id, tokenizer->eos_id()) << text;
      EXPECT_NE(id, 0) << text;
    }
    EXPECT_EQ(tokenizer->Decode(ids), text);
  }
}

TEST(SpmTokenizerTest, BosEosAndDecode) {
  auto tokenizer = LoadTokenizer(kLlamaSpmFile);
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->n_vocab(), 32000);
  EXPECT_THAT(tokenizer->Encode("", true), ElementsAre(1));
  EXPECT_TRUE(tokenizer->Encode("", false).empty());
  const std::vector<int32_t> ids = tokenizer->Encode("Hello world", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(tokenizer->TokenBytes(1), "");
  EXPECT_EQ(tokenizer->TokenBytes(2), "");
  EXPECT_EQ(tokenizer->Decode(ids), "Hello world");
  EXPECT_EQ(tokenizer->Decode(ids, /*strip_leading_space=*/false), " Hello world");
  EXPECT_TRUE(tokenizer->IsEog(2));
  EXPECT_FALSE(tokenizer->IsEog(1));
  EXPECT_EQ(tokenizer->TokenBytes(-1), "");
  EXPECT_EQ(tokenizer->TokenBytes(tokenizer->n_vocab()), "");
}

// A small in-memory vocabulary, for cases the real one cannot isolate.
struct TinyVocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<int32_t> types;
  void Add(std::string text, float score, int32_t type = 1) {
    tokens.push_back(std::move(text));
    scores.push_back(score);
    types.push_back(type);
  }
};

absl::StatusOr<std::unique_ptr<Tokenizer>> Build(
    GgufWriter& w, std::vector<uint8_t>& bytes) {
  auto buffer = w.WriteToBuffer();
  if (!buffer.ok()) return buffer.status();
  bytes = std::move(*buffer);
  SWIFTLET_ASSIGN_OR_RETURN(auto file, GgufFile::Parse(bytes, "tiny.gguf"));
  return Tokenizer::FromGguf(*file);
}

void SetVocab(GgufWriter& w, const TinyVocab& v) {
  w.Set("tokenizer.ggml.tokens", GgufValue::StringArray(v.tokens));
  w.Set("tokenizer.ggml.scores",
        GgufValue::Array<float>(GgufType::kFloat32, std::span<const float>(v.scores)));
  w.Set("tokenizer.ggml.token_type",
        GgufValue::Array<int32_t>(GgufType::kInt32, std::span<const int32_t>(v.types)));
}

TinyVocab MakeTiny() {
  TinyVocab v;
  v.Add("<unk>", 0, 2);   // 0
  v.Add("<s>", 0, 3);     // 1
  v.Add("</s>", 0, 3);    // 2
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.Add(name, 0, 6);    // 3 + b
  }
  v.Add("\xe2\x96\x81", -1);        // 259 "▁"
  v.Add("a", -2);                    // 260
  v.Add("b", -2);                    // 261
  v.Add("ab", -5);                   // 262
  v.Add("bb", -3);                   // 263
  v.Add("\xe2\x96\x81" "a", -4);     // 264 "▁a"
  v.Add("<", -2);                    // 265
  v.Add("s", -2);                    // 266
  v.Add(">", -2);                    // 267
  v.Add("<s", -1);                   // 268
  return v;
}

TEST(SpmTokenizerTest, TinyVocabMergesByScoreThenLeftmost) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  SetVocab(w, MakeTiny());
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  const Tokenizer& t = **tokenizer;
  // "▁abb": "bb" (-3) merges before "▁a" (-4) and "ab" (-5).
  EXPECT_THAT(t.Encode("abb", false), ElementsAre(264, 263));
  // "▁bbb": the leftmost "bb" wins the tie.
  EXPECT_THAT(t.Encode("bbb", false), ElementsAre(259, 263, 261));
  // "c" is not a token: byte fallback.
  EXPECT_THAT(t.Encode("c", true), ElementsAre(1, 259, 3 + 'c'));
  // "<s" is a token but "<s>" (control) is never formed.
  EXPECT_THAT(t.Encode("<s>", false), ElementsAre(259, 268, 267));
  EXPECT_EQ(t.Decode(t.Encode("a c<s>", true)), "a c<s>");
}

TEST(SpmTokenizerTest, TinyVocabWithoutSpacePrefix) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.add_space_prefix", GgufValue::Bool(false));
  w.Set("tokenizer.ggml.eot_token_id", GgufValue::Uint32(260));
  SetVocab(w, MakeTiny());
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_TRUE(tokenizer.ok()) << tokenizer.status();
  EXPECT_THAT((*tokenizer)->Encode("ab", false), ElementsAre(262));
  EXPECT_EQ((*tokenizer)->Decode((*tokenizer)->Encode(" a", false)), " a");
  EXPECT_TRUE((*tokenizer)->IsEog(260));
  EXPECT_TRUE((*tokenizer)->IsEog(2));
}

TEST(SpmTokenizerTest, UnknownTokenizerKindIsNamed) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("rwkv"));
  SetVocab(w, MakeTiny());
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_EQ(tokenizer.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(tokenizer.status().message()),
              HasSubstr("tokenizer.ggml.model 'rwkv' is not supported (supported: llama, gpt2, bert)"));
}

TEST(SpmTokenizerTest, MissingModelIsAnError) {
  GgufWriter w;
  SetVocab(w, MakeTiny());
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_THAT(std::string(tokenizer.status().message()),
              HasSubstr("tokenizer.ggml.model is missing"));
}

TEST(SpmTokenizerTest, MismatchedArraysAreErrors) {
  TinyVocab v = MakeTiny();
  v.scores.pop_back();
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  SetVocab(w, v);
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_THAT(std::string(tokenizer.status().message()),
              HasSubstr("tokenizer.ggml.scores has 268 entries"));

  TinyVocab v2 = MakeTiny();
  v2.types.push_back(1);
  GgufWriter w2;
  w2.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  SetVocab(w2, v2);
  tokenizer = Build(w2, bytes);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_THAT(std::string(tokenizer.status().message()),
              HasSubstr("tokenizer.ggml.token_type has 270 entries"));
}

TEST(SpmTokenizerTest, SpecialIdOutOfRangeIsAnError) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  w.Set("tokenizer.ggml.eos_token_id", GgufValue::Uint32(100000));
  SetVocab(w, MakeTiny());
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_THAT(std::string(tokenizer.status().message()),
              HasSubstr("tokenizer.ggml.eos_token_id = 100000 is outside"));
}

TEST(SpmTokenizerTest, MissingTokensIsAnError) {
  GgufWriter w;
  w.Set("tokenizer.ggml.model", GgufValue::String("llama"));
  std::vector<uint8_t> bytes;
  auto tokenizer = Build(w, bytes);
  ASSERT_FALSE(tokenizer.ok());
  EXPECT_THAT(std::string(tokenizer.status().message()),
              HasSubstr("tokenizer.ggml.tokens is missing"));
}

}  // namespace
}  // namespace swiftlet
