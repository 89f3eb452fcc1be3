// libFuzzer target for the text layer. The vocabulary is a GGUF file named by
// SWIFTLET_FUZZ_VOCAB (normally the llama-spm test vocabulary), loaded once.
// For any input bytes, as text:
//   - Encode / EncodeWithSpecial / EncodeMixed return ids inside the vocab;
//   - Decode(Encode(s)) == s for valid UTF-8 s without "▁" (U+2581, which
//     SentencePiece cannot tell from an escaped space), when the vocabulary
//     is lossless (a byte-fallback SentencePiece one; WordPiece lowercases);
//   - the IncrementalDetokenizer emits only valid UTF-8 whose concatenation
//     is SanitizeUtf8(Decode(ids)).
// Any violation aborts.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf_file.h"
#include "text/detokenizer.h"
#include "text/special_tokens.h"
#include "text/tokenizer.h"

namespace {

using swiftlet::Tokenizer;

const Tokenizer& LoadTokenizer() {
  static const Tokenizer* tokenizer = [] {
    const char* path = std::getenv("SWIFTLET_FUZZ_VOCAB");
    if (path == nullptr) {
      std::fprintf(stderr, "set SWIFTLET_FUZZ_VOCAB to a GGUF vocabulary\n");
      std::abort();
    }
    auto file = swiftlet::GgufFile::Open(path);
    if (!file.ok()) {
      std::fprintf(stderr, "%s\n", std::string(file.status().message()).c_str());
      std::abort();
    }
    auto loaded = Tokenizer::FromGguf(**file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
      std::abort();
    }
    return loaded->release();  // Lives for the whole run.
  }();
  return *tokenizer;
}

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", what);
    std::abort();
  }
}

void CheckIds(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  for (int32_t id : ids) Check(id >= 0 && id < tokenizer.n_vocab(), "id out of range");
}

bool IsValidUtf8(std::string_view s) { return swiftlet::SanitizeUtf8(s) == s; }

void CheckStreaming(const Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  swiftlet::IncrementalDetokenizer detok(tokenizer);
  std::string all;
  for (int32_t id : ids) {
    const std::string piece = detok.Push(id);
    Check(IsValidUtf8(piece), "detokenizer emitted invalid UTF-8");
    all += piece;
  }
  all += detok.Flush();
  Check(all == swiftlet::SanitizeUtf8(tokenizer.Decode(ids)),
        "streamed text differs from Decode");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tokenizer& tokenizer = LoadTokenizer();
  const std::string text(reinterpret_cast<const char*>(data), size);

  static const bool lossless = [&tokenizer] {
    const std::string probe = "Ab \xe4\xbd\xa0\n";
    return tokenizer.Decode(tokenizer.Encode(probe, false)) == probe;
  }();
  const std::vector<int32_t> ids = tokenizer.Encode(text, /*add_bos=*/false);
  CheckIds(tokenizer, ids);
  if (lossless && IsValidUtf8(text) && text.find("\xe2\x96\x81") == std::string::npos) {
    Check(tokenizer.Decode(ids) == text, "Decode(Encode(s)) != s");
  }
  CheckStreaming(tokenizer, ids);

  const std::vector<int32_t> special = tokenizer.EncodeWithSpecial(text, /*add_bos=*/true);
  CheckIds(tokenizer, special);
  CheckStreaming(tokenizer, special);

  // Template text first, user content second: the user half never yields a
  // special token that plain Encode of it would not.
  const size_t half = size / 2;
  const std::vector<swiftlet::TextPiece> pieces = {{text.substr(0, half), true},
                                                   {text.substr(half), false}};
  const std::vector<int32_t> mixed = tokenizer.EncodeMixed(pieces, /*add_bos=*/false);
  CheckIds(tokenizer, mixed);
  const std::vector<swiftlet::TextPiece> user_only = {{text, false}};
  Check(tokenizer.EncodeMixed(user_only, false) == ids, "EncodeMixed(user) != Encode");
  return 0;
}
