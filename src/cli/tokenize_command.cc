// swiftlet tokenize: the token ids of a text, separated by single spaces.
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "gguf/gguf_file.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

struct TokenizeOptions {
  std::string model_path;
  std::string text;
  bool bos = false;
};

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

}  // namespace

Command AddTokenizeCommand(CLI::App& parent) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = parent.add_subcommand("tokenize", "Print the token ids of a text");
  cmd->add_option("-m,--model", o->model_path, "GGUF model or vocabulary")->required();
  cmd->add_option("--text", o->text, "Text to tokenize")->required();
  cmd->add_flag("--bos", o->bos, "Prepend the BOS token");
  return {cmd, [o] { return RunTokenize(*o); }};
}

}  // namespace swiftlet::cli
