// The tokenizer the translation tests render prompts with: Llama's
// SentencePiece vocabulary from the shared test data.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>

#include "gguf/gguf_file.h"
#include "text/tokenizer.h"

namespace swiftlet::translate {

// Null, with a test failure, when it cannot be loaded.
inline std::unique_ptr<Tokenizer> LlamaSpmTokenizer() {
  const std::string path = SWIFTLET_SHARED_DIR "/testdata/vocab/ggml-vocab-llama-spm.gguf";
  auto file = GgufFile::Open(path);
  EXPECT_TRUE(file.ok()) << file.status() << " (the shared test data must sit beside the checkout)";
  if (!file.ok()) return nullptr;
  auto t = Tokenizer::FromGguf(**file);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

}  // namespace swiftlet::translate
