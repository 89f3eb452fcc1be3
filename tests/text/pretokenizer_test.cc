// Checks every pre-tokenizer against the published regexes, run by Python's
// `regex` module in pretokenizer_reference.py (beside this file).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "text/pretokenizer.h"

namespace swiftlet {
namespace {

std::string ReferenceScript() {
  std::string here = __FILE__;
  const size_t slash = here.find_last_of('/');
  return (slash == std::string::npos ? std::string(".") : here.substr(0, slash)) +
         "/pretokenizer_reference.py";
}

bool RunCommand(const std::string& command, std::string& out) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return false;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  return pclose(pipe) == 0;
}

std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  }
  return out;
}

std::string Show(const std::vector<std::string>& pieces) {
  std::string s;
  for (const std::string& p : pieces) s += "[" + p + "]";
  return s;
}

TEST(PreTokenizerTest, MatchesPythonRegexReference) {
  std::string out;
  const std::string command = "/usr/bin/python3 " + ReferenceScript();
  ASSERT_TRUE(RunCommand(command, out)) << "failed: " << command;
  std::istringstream lines(out);
  std::string line;
  std::map<std::string, int> checked;
  int failures = 0;
  while (std::getline(lines, line)) {
    const size_t tab1 = line.find('\t');
    const size_t tab2 = line.find('\t', tab1 + 1);
    ASSERT_NE(tab2, std::string::npos) << line;
    const std::string name = line.substr(0, tab1);
    const std::string text = FromHex(std::string_view(line).substr(tab1 + 1, tab2 - tab1 - 1));
    std::vector<std::string> want;
    std::istringstream pieces(line.substr(tab2 + 1));
    std::string hex;
    while (std::getline(pieces, hex, ',')) want.push_back(FromHex(hex));

    absl::StatusOr<PreTokenizer> pre = PreTokenizer::FromName(name);
    ASSERT_TRUE(pre.ok()) << pre.status();
    std::vector<std::string> got;
    for (std::string_view piece : pre->Split(text)) got.emplace_back(piece);
    EXPECT_EQ(got, want) << name << " on '" << text << "'\n got: " << Show(got)
                         << "\nwant: " << Show(want);
    if (got != want) ++failures;
    ++checked[name];
  }
  // Every required pre-tokenizer took part.
  for (const char* name : {"default", "gpt2", "mpt", "llama-bpe", "qwen2", "deepseek-llm",
                           "deepseek-coder", "falcon", "starcoder", "refact", "smollm",
                           "gpt-4o"}) {
    EXPECT_GT(checked[name], 40) << name;
  }
  EXPECT_EQ(failures, 0);
}

TEST(PreTokenizerTest, UnknownNameListsSupported) {
  absl::StatusOr<PreTokenizer> pre = PreTokenizer::FromName("no-such-pre");
  ASSERT_FALSE(pre.ok());
  const std::string message(pre.status().message());
  EXPECT_NE(message.find("'no-such-pre'"), std::string::npos) << message;
  EXPECT_NE(message.find("llama-bpe"), std::string::npos) << message;
  EXPECT_NE(message.find("gpt-4o"), std::string::npos) << message;
  EXPECT_TRUE(PreTokenizer::FromName("").ok());
}

TEST(PreTokenizerTest, InvalidUtf8StaysInPieces) {
  const std::string text = "a\xff\xc3 b\xe2\x82 \x80z\xf0\x9f\xed\xa0\x80 12\xc0\xaf";
  for (const char* name : {"default", "gpt2", "llama-bpe", "qwen2", "deepseek-llm",
                           "deepseek-coder", "falcon", "starcoder", "gpt-4o"}) {
    absl::StatusOr<PreTokenizer> pre = PreTokenizer::FromName(name);
    ASSERT_TRUE(pre.ok());
    std::string joined;
    for (std::string_view piece : pre->Split(text)) {
      EXPECT_FALSE(piece.empty()) << name;
      joined += piece;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(PreTokenizerTest, LongWhitespaceRunIsLinear) {
  std::string text(200000, ' ');
  text += 'x';
  text.append(100000, '\n');
  absl::StatusOr<PreTokenizer> pre = PreTokenizer::FromName("llama-bpe");
  ASSERT_TRUE(pre.ok());
  const std::vector<std::string_view> pieces = pre->Split(text);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].size(), 199999u);
  EXPECT_EQ(pieces[1], " x");
}

}  // namespace
}  // namespace swiftlet
