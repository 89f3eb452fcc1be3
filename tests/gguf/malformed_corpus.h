// A corpus of malformed GGUF files, each paired with the words its error must
// contain. Used by the reader's tests, the CLI end-to-end test (through
// gguf_corpus_writer) and as seeds for the fuzz target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace swiftlet::testing {

struct MalformedGguf {
  std::string name;            // Short, file-name safe.
  std::vector<uint8_t> bytes;
  std::string expected_error;  // A substring the error message must contain.
};

// A small valid file: two metadata keys, an F32 [8, 2] tensor and a Q8_0
// [32, 1] tensor, 32-byte aligned.
std::vector<uint8_t> ValidGguf();

std::vector<MalformedGguf> MalformedCorpus();

}  // namespace swiftlet::testing
