// swiftlet tokenize: the token ids of a text, separated by single spaces;
// with --jsonl, of every text on stdin (one JSON string a line), a line of
// ids each, in one process: a dataset, or texts that hold newlines or NULs,
// which a command line cannot carry.
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "gguf/gguf_file.h"
#include "text/tokenizer.h"

namespace swiftlet::cli {
namespace {

// A line of --jsonl input past this is refused rather than read whole: a
// text the server would refuse too (its request bodies stop at 8 MiB).
constexpr size_t kMaxJsonlLineBytes = 16 << 20;

struct TokenizeOptions {
  std::string model_path;
  std::optional<std::string> text;
  bool jsonl = false;
  bool bos = false;
};

void PrintIds(const std::vector<int32_t>& ids) {
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) line += ' ';
    line += std::to_string(ids[i]);
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
}

// Reads one line of stdin into `line` (without its '\n'); false at the end.
// A line longer than kMaxJsonlLineBytes sets `too_long`. Byte by byte (a
// raw NUL stays in the line, to be refused), unlocked: this
// process's one thread reads stdin.
bool ReadBoundedLine(std::string& line, bool& too_long) {
  line.clear();
  too_long = false;
  int c = EOF;
  while ((c = getc_unlocked(stdin)) != EOF && c != '\n') {
    if (line.size() == kMaxJsonlLineBytes) {
      too_long = true;
      return true;
    }
    line.push_back(static_cast<char>(c));
  }
  if (c == EOF && std::ferror(stdin)) return false;  // Reported by the caller.
  return c == '\n' || !line.empty();
}

int TokenizeJsonLines(const Tokenizer& tokenizer, bool bos) {
  std::string line;
  bool too_long = false;
  for (long number = 1; ReadBoundedLine(line, too_long); ++number) {
    const std::string where = "stdin line " + std::to_string(number) + ": ";
    if (too_long) return ReportError(where + "longer than " + std::to_string(kMaxJsonlLineBytes) + " bytes");
    // nlohmann's parser stops at a raw NUL as at the end of its input.
    if (line.find('\0') != std::string::npos) return ReportError(where + "a raw NUL byte (JSON writes \\u0000)");
    // Only a string is parsed: 16 MiB of "[[[[..." would build millions of
    // nested arrays (a gigabyte) before failing.
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] != '"') {
      return ReportError(where + "not a JSON string (--jsonl reads one a line)");
    }
    nlohmann::json text = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!text.is_string()) return ReportError(where + "not a JSON string (--jsonl reads one a line)");
    PrintIds(tokenizer.Encode(text.get_ref<const std::string&>(), bos));
  }
  if (std::ferror(stdin)) return ReportError("reading stdin failed");
  return std::fflush(stdout) == 0 && !std::ferror(stdout) ? 0 : ReportError("writing stdout failed");
}

int RunTokenize(const TokenizeOptions& o) {
  if (!o.text && !o.jsonl) return ReportError("tokenize needs --text TEXT, or --jsonl with the texts on stdin");
  auto file = GgufFile::Open(o.model_path);
  if (!file.ok()) return ReportError(file.status());
  auto tokenizer = Tokenizer::FromGguf(**file);
  if (!tokenizer.ok()) return ReportError(tokenizer.status());
  if (o.jsonl) return TokenizeJsonLines(**tokenizer, o.bos);
  PrintIds((*tokenizer)->Encode(*o.text, o.bos));
  return 0;
}

}  // namespace

Command AddTokenizeCommand(CLI::App& parent) {
  auto o = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = parent.add_subcommand("tokenize", "Print the token ids of a text");
  cmd->add_option("-m,--model", o->model_path, "GGUF model or vocabulary")->required();
  CLI::Option* text = cmd->add_option("--text", o->text, "Text to tokenize");
  CLI::Option* jsonl = cmd->add_flag("--jsonl", o->jsonl,
                                     "Tokenize each line of stdin, a JSON string, printing a line of ids for each");
  text->excludes(jsonl);
  cmd->add_flag("--bos", o->bos, "Prepend the BOS token");
  return {cmd, [o] { return RunTokenize(*o); }};
}

}  // namespace swiftlet::cli
