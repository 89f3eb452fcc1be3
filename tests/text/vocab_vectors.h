// The tokenizer test vectors of shared/testdata/vocab (llama.cpp's
// test-tokenizer-0 format), loaded once for every tokenizer test.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "text/tokenizer.h"

namespace swiftlet::testing {

inline const std::string kVocabDir = SWIFTLET_SHARED_DIR "/testdata/vocab/";

struct VectorCase {
  std::string text;
  std::vector<int32_t> ids;
};

// NAME.inp holds texts separated by "\n__ggml_vocab_test__\n" (the file
// ends with one, which is no case); line i of NAME.out the ids of text i,
// without BOS. Missing files and mismatched counts are test failures.
std::vector<VectorCase> LoadVectors(const std::string& base);

// The tokenizer of kVocabDir + name; null (with a test failure) on error.
std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& name);

// "1 2 3 " for failure messages.
std::string Ids(const std::vector<int32_t>& ids);

// Appends code point cp (below 0x110000) to s in UTF-8, as RFC 3629's
// table says: the random texts' encoder, written apart from text/utf8.h.
void AppendUtf8(std::string& s, uint32_t cp);

}  // namespace swiftlet::testing
