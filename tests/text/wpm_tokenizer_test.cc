#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "text/vocab_vectors.h"

#include <cstdint>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf_file.h"
#include "text/tokenizer.h"
#include "text/wpm_tokenizer.h"

namespace swiftlet {
namespace {

using ::testing::ElementsAre;

using testing::kVocabDir;
const std::string kBertBge = "ggml-vocab-bert-bge.gguf";

using testing::LoadVectors;
using testing::VectorCase;

std::unique_ptr<Tokenizer> LoadBge() { return testing::LoadTokenizer(kBertBge); }

using testing::Ids;

TEST(WpmTokenizerTest, MatchesLlamaCppVectors) {
  auto tokenizer = LoadBge();
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<VectorCase> cases = LoadVectors(kVocabDir + kBertBge);
  ASSERT_GT(cases.size(), 10u);
  int passed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<int32_t> got = tokenizer->Encode(cases[i].text, /*add_bos=*/false);
    EXPECT_EQ(got, cases[i].ids) << "case " << i << " text '" << cases[i].text
                                 << "'\n got: " << Ids(got) << "\nwant: " << Ids(cases[i].ids);
    if (got == cases[i].ids) ++passed;
  }
  std::cout << passed << " / " << cases.size() << " bert-bge vector cases pass\n";
}

TEST(WpmTokenizerTest, ReadsBgeMetadata) {
  auto tokenizer = LoadBge();
  ASSERT_NE(tokenizer, nullptr);
  const auto* wpm = dynamic_cast<const WpmTokenizer*>(tokenizer.get());
  ASSERT_NE(wpm, nullptr);
  EXPECT_TRUE(wpm->uncased());
  EXPECT_EQ(tokenizer->bos_id(), 101);  // [CLS]
  EXPECT_EQ(wpm->sep_id(), 102);        // [SEP]
  EXPECT_EQ(tokenizer->vocab().unknown_id, 100);
  EXPECT_TRUE(tokenizer->add_bos_token());
}

TEST(WpmTokenizerTest, AddBosPrependsCls) {
  auto tokenizer = LoadBge();
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_THAT(tokenizer->Encode("Hello world", true), ElementsAre(101, 7592, 2088));
  EXPECT_THAT(tokenizer->Encode("", true), ElementsAre(101));
  EXPECT_TRUE(tokenizer->Encode("", false).empty());
  EXPECT_TRUE(tokenizer->Encode(" \t\n ", false).empty());
}

TEST(WpmTokenizerTest, BasicTokenization) {
  auto tokenizer = LoadBge();
  ASSERT_NE(tokenizer, nullptr);
  const auto& wpm = dynamic_cast<const WpmTokenizer&>(*tokenizer);
  // Lowercased, accents stripped, punctuation and ideographs split off,
  // control characters dropped, "$" and "^" split as BERT does.
  EXPECT_THAT(wpm.SplitWords("Héllo, WORLD!"), ElementsAre("hello", ",", "world", "!"));
  EXPECT_THAT(wpm.SplitWords("a$b^c"), ElementsAre("a", "$", "b", "^", "c"));
  EXPECT_THAT(wpm.SplitWords("\xe4\xbd\xa0\xe5\xa5\xbd" "ab"),  // 你好ab
              ElementsAre("\xe4\xbd\xa0", "\xe5\xa5\xbd", "ab"));
  EXPECT_THAT(wpm.SplitWords("x\x01y\xe2\x80\x8bz"), ElementsAre("xyz"));  // Cc, Cf
  EXPECT_THAT(wpm.SplitWords("a\xc2\xa0" "b\xe3\x80\x80" "c"), ElementsAre("a", "b", "c"));
  // Invalid UTF-8 bytes are dropped like U+FFFD.
  EXPECT_THAT(wpm.SplitWords("ab\xff" "cd"), ElementsAre("abcd"));
}

TEST(WpmTokenizerTest, UnknownAndLongWords) {
  auto tokenizer = LoadBge();
  ASSERT_NE(tokenizer, nullptr);
  // A character with no piece makes the whole word [UNK].
  EXPECT_THAT(tokenizer->Encode("hello\xf0\x9f\x98\x80" "world", false), ElementsAre(100));
  EXPECT_THAT(tokenizer->Encode(std::string(101, 'a'), false), ElementsAre(100));
  EXPECT_NE(tokenizer->Encode(std::string(100, 'a'), false), std::vector<int32_t>{100});
}

TEST(WpmTokenizerTest, DecodeJoinsPieces) {
  auto tokenizer = LoadBge();
  ASSERT_NE(tokenizer, nullptr);
  const std::vector<int32_t> ids = tokenizer->Encode("Hello, unaffable world!", true);
  EXPECT_EQ(tokenizer->Decode(ids), "hello , unaffable world !");
  EXPECT_EQ(tokenizer->Decode(ids, /*strip_leading_space=*/false),
            " hello , unaffable world !");
  const std::vector<int32_t> sep = {102};
  EXPECT_EQ(tokenizer->Decode(sep), "");
}

}  // namespace
}  // namespace swiftlet
