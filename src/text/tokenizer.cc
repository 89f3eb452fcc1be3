#include "text/tokenizer.h"

#include "core/str_cat.h"
#include "gguf/gguf_file.h"
#include "text/bpe_tokenizer.h"
#include "text/spm_tokenizer.h"
#include "text/wpm_tokenizer.h"

namespace swiftlet {

absl::StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const GgufFile& file) {
  constexpr std::string_view kModelKey = "tokenizer.ggml.model";
  if (file.Find(kModelKey) == nullptr) {
    return absl::InvalidArgumentError(
        StrCat(file.name(), ": ", kModelKey, " is missing; the file has no tokenizer"));
  }
  absl::StatusOr<std::string> model = file.GetString(kModelKey);
  if (!model.ok()) {
    return absl::InvalidArgumentError(StrCat(file.name(), ": ", model.status().message()));
  }
  if (*model == "llama") {
    absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = SpmTokenizer::FromGguf(file);
    if (!tokenizer.ok()) {
      return absl::Status(tokenizer.status().code(),
                          StrCat(file.name(), ": ", tokenizer.status().message()));
    }
    return tokenizer;
  }
  if (*model == "bert") {
    absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = WpmTokenizer::FromGguf(file);
    if (!tokenizer.ok()) {
      return absl::Status(tokenizer.status().code(),
                          StrCat(file.name(), ": ", tokenizer.status().message()));
    }
    return tokenizer;
  }
  if (*model == "gpt2") {
    absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = BpeTokenizer::FromGguf(file);
    if (!tokenizer.ok()) {
      return absl::Status(tokenizer.status().code(),
                          StrCat(file.name(), ": ", tokenizer.status().message()));
    }
    return tokenizer;
  }
  return absl::UnimplementedError(StrCat(file.name(), ": ", kModelKey, " '", *model,
                                         "' is not supported (supported: llama, gpt2, bert)"));
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool strip_leading_space) const {
  std::string out;
  bool strip = strip_leading_space && vocab_.add_space_prefix;
  for (int32_t id : ids) {
    std::string piece = TokenBytes(id);
    if (strip && !piece.empty()) {
      if (StartsWithSpacePrefix(id) && piece[0] == ' ') piece.erase(0, 1);
      strip = false;
    }
    out += piece;
  }
  return out;
}

}  // namespace swiftlet
