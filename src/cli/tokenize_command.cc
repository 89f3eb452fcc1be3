// swiftlet tokenize: the token ids of a text, separated by single spaces.
#include <cstdio>

#include "cli/commands.h"
#include "gguf/gguf_file.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {

int RunTokenize(const TokenizeOptions& o) {
  auto file = GgufFile::Open(o.model_path);
  if (!file.ok()) return ReportError(file.status());
  auto tokenizer = Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) return ReportError(tokenizer.status());
  const std::vector<int32_t> ids = (*tokenizer)->Encode(o.text, o.bos);
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  std::printf("%s\n", line.c_str());
  return 0;
}

}  // namespace swiftlet::cli
