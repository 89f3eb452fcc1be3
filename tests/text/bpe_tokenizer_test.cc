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
#include "text/bpe_tokenizer.h"
#include "text/tokenizer.h"

namespace swiftlet {
namespace {

using testing::kVocabDir;

using testing::AppendUtf8;
using testing::LoadVectors;
using testing::VectorCase;

using testing::LoadTokenizer;

using testing::Ids;

class BpeVectorTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeVectorTest, MatchesLlamaCppVectors) {
  const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
  auto tokenizer = LoadTokenizer(name);
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<VectorCase> cases = LoadVectors(kVocabDir + name);
  ASSERT_GT(cases.size(), 10u);
  size_t passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tokenizer->Encode(cases[i].text, /*add_bos=*/false);
    EXPECT_EQ(got, cases[i].ids) << name << " case " << i << " text '" << cases[i].text
                                 << "'\n got: " << Ids(got) << "\nwant: " << Ids(cases[i].ids);
    if (got == cases[i].ids) ++passed;
    EXPECT_EQ(tokenizer->Decode(got), cases[i].text) << name << " case " << i;
  }
  std::cout << name << ": " << passed << " / " << cases.size() << " vector cases pass\n";
}

INSTANTIATE_TEST_SUITE_P(Vocabs, BpeVectorTest,
                         ::testing::Values("gpt-2", "falcon", "mpt", "refact", "deepseek-llm"));

std::string RandomText(std::mt19937& rng) {
  std::string text;
  auto pick = [&](uint32_t lo, uint32_t hi) {
    return std::uniform_int_distribution<uint32_t>(lo, hi)(rng);
  };
  const int n = std::uniform_int_distribution<int>(0, 60)(rng);
  for (int i = 0; i < n; ++i) {
    switch (pick(0, 9)) {
      case 0:
      case 1:
        AppendUtf8(text, pick(0x20, 0x7e));
        break;
      case 2:
        AppendUtf8(text, pick(0x4e00, 0x9fff));  // CJK
        break;
      case 3:
        AppendUtf8(text, pick(0x0e01, 0x0e5b));  // Thai
        break;
      case 4:
        AppendUtf8(text, pick(0x1f300, 0x1faff));  // Emoji
        if (pick(0, 1)) AppendUtf8(text, 0x200d);  // ZWJ
        break;
      case 5:
        AppendUtf8(text, pick(0x0300, 0x036f));  // Combining marks
        break;
      case 6:
        AppendUtf8(text, pick(0xa0, 0x24ff));
        break;
      case 7:
        text.append(pick(1, 40), " \n\t"[pick(0, 2)]);  // Whitespace runs
        break;
      case 8:
        AppendUtf8(text, pick(0x30, 0x39));
        break;
      default:
        AppendUtf8(text, pick(0xac00, 0xd7a3));  // Hangul
        break;
    }
  }
  return text;
}

class BpeRoundTripTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeRoundTripTest, RandomUtf8RoundTrips) {
  const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
  auto tokenizer = LoadTokenizer(name);
  ASSERT_NE(tokenizer, nullptr);
  std::mt19937 rng(4321);
  for (int iter = 0; iter < 300; ++iter) {
    const std::string text = RandomText(rng);
    const std::vector<int32_t> ids = tokenizer->Encode(text, iter % 2 == 0);
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tokenizer->n_vocab());
    }
    EXPECT_EQ(tokenizer->Decode(ids), text) << name << " iteration " << iter;
  }
}

// Byte-level BPE spells every byte, so invalid UTF-8 passes through unchanged
// and round-trips wherever the vocabulary has all 256 byte tokens; it never
// crashes or yields ids out of range.
TEST_P(BpeRoundTripTest, InvalidUtf8RoundTripsAsBytes) {
  const std::string name = std::string("ggml-vocab-") + GetParam() + ".gguf";
  auto tokenizer = LoadTokenizer(name);
  ASSERT_NE(tokenizer, nullptr);
  std::mt19937 rng(99);
  std::vector<std::string> texts = {"a\xff\xc3 b\xe2\x82 \x80z\xf0\x9f", "\xed\xa0\x80",
                                    "\xc0\xaf 12\xfe\xfe", std::string("\0x\0", 3)};
  for (int iter = 0; iter < 100; ++iter) {
    std::string s;
    const int n = std::uniform_int_distribution<int>(0, 30)(rng);
    for (int i = 0; i < n; ++i) s += static_cast<char>(std::uniform_int_distribution<int>(0, 255)(rng));
    texts.push_back(s);
  }
  const auto* bpe = dynamic_cast<const BpeTokenizer*>(tokenizer.get());
  ASSERT_NE(bpe, nullptr);
  for (const std::string& text : texts) {
    const std::vector<int32_t> ids = tokenizer->Encode(text, false);
    for (int32_t id : ids) {
      ASSERT_GE(id, 0);
      ASSERT_LT(id, tokenizer->n_vocab());
    }
    // Some vocabularies (Falcon's) lack tokens for some bytes; those are dropped.
    if (bpe->has_all_bytes()) {
      EXPECT_EQ(tokenizer->Decode(ids), text) << name;
    }
  }
  std::cout << name << (bpe->has_all_bytes() ? ": has" : ": lacks") << " all 256 byte tokens\n";
}

INSTANTIATE_TEST_SUITE_P(Vocabs, BpeRoundTripTest,
                         ::testing::Values("gpt-2", "falcon", "mpt", "refact", "deepseek-llm",
                                           "gpt-neox"));

TEST(BpeTokenizerTest, ControlTokenTextStaysText) {
  auto tokenizer = LoadTokenizer("ggml-vocab-gpt-2.gguf");
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_FALSE(tokenizer->add_bos_token());
  for (const std::string text : {"<|endoftext|>", "hi<|endoftext|>there"}) {
    const std::vector<int32_t> ids = tokenizer->Encode(text, false);
    for (int32_t id : ids) {
      EXPECT_EQ(tokenizer->vocab().kinds[id] == TokenKind::kControl, false) << text;
      EXPECT_NE(id, tokenizer->eos_id()) << text;
    }
    EXPECT_EQ(tokenizer->Decode(ids), text);
  }
}

TEST(BpeTokenizerTest, ByteAlphabet) {
  EXPECT_EQ(BpeByteToCodePoint('!'), U'!');
  EXPECT_EQ(BpeByteToCodePoint(' '), 0x120u);   // "Ġ"
  EXPECT_EQ(BpeByteToCodePoint('\n'), 0x10au);  // "Ċ"
  EXPECT_EQ(BpeByteToCodePoint(0), 0x100u);
  EXPECT_EQ(BpeByteToCodePoint(0xad), 0x143u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(BpeCodePointToByte(BpeByteToCodePoint(static_cast<uint8_t>(b))), b);
  }
  EXPECT_EQ(BpeCodePointToByte(0x20), -1);
  EXPECT_EQ(BpeCodePointToByte(0x144), -1);
}

TEST(BpeTokenizerTest, TokenBytesAndBos) {
  auto tokenizer = LoadTokenizer("ggml-vocab-gpt-2.gguf");
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<int32_t> ids = tokenizer->Encode(" Hello\n", false);
  std::string joined;
  for (int32_t id : ids) joined += tokenizer->TokenBytes(id);
  EXPECT_EQ(joined, " Hello\n");
  EXPECT_EQ(tokenizer->TokenBytes(-1), "");
  EXPECT_EQ(tokenizer->TokenBytes(tokenizer->n_vocab()), "");
  if (tokenizer->bos_id() >= 0) {
    const std::vector<int32_t> with_bos = tokenizer->Encode("Hello", true);
    ASSERT_FALSE(with_bos.empty());
    EXPECT_EQ(with_bos[0], tokenizer->bos_id());
  }
}

}  // namespace
}  // namespace swiftlet
