#include "text/vocab_vectors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "gguf/gguf_file.h"

namespace swiftlet::testing {
namespace {

bool ReadWholeFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

std::string Trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t begin = s.find_first_not_of(ws);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(ws) - begin + 1);
}

}  // namespace

std::vector<VectorCase> LoadVectors(const std::string& base) {
  std::string inp, out;
  EXPECT_TRUE(ReadWholeFile(base + ".inp", inp)) << "missing " << base << ".inp";
  EXPECT_TRUE(ReadWholeFile(base + ".out", out)) << "missing " << base << ".out";
  std::vector<VectorCase> cases;
  const std::string sep = "\n__ggml_vocab_test__\n";
  for (size_t pos = 0;;) {
    const size_t next = inp.find(sep, pos);
    if (next == std::string::npos) {
      if (pos < inp.size()) cases.push_back({inp.substr(pos), {}});
      break;
    }
    cases.push_back({inp.substr(pos, next - pos), {}});
    pos = next + sep.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (i >= cases.size()) {
      ADD_FAILURE() << "extra line " << i << " in " << base << ".out";
      break;
    }
    std::istringstream ids(Trim(line));
    int32_t id;
    while (ids >> id) cases[i].ids.push_back(id);
    ++i;
  }
  EXPECT_EQ(i, cases.size()) << base << ".out has " << i << " lines for " << cases.size()
                             << " texts";
  return cases;
}

std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& name) {
  auto file = GgufFile::Open(kVocabDir + name);
  EXPECT_TRUE(file.ok()) << file.status();
  if (!file.ok()) return nullptr;
  auto tokenizer = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(tokenizer.ok()) << tokenizer.status();
  return tokenizer.ok() ? std::move(*tokenizer) : nullptr;
}

std::string Ids(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += std::to_string(id) + " ";
  return s;
}

void AppendUtf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xc0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xe0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    s += static_cast<char>(0xf0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    s += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

}  // namespace swiftlet::testing
