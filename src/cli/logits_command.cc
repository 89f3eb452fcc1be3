// swiftlet tools logits: the logits at every position of one token sequence,
// written as raw little-endian float32 [n_tokens, n_vocab]. Tests compare
// them with an independent reference implementation.
#include <cstdio>
#include <sstream>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "core/str_cat.h"
#include "core/thread_pool.h"
#include "model/model.h"
#include "model/model_runner.h"

namespace swiftlet::cli {
namespace {

struct LogitsOptions {
  std::string model_path;
  std::string tokens;  // Space-separated ids.
  std::string kv_type = "f32";
  int64_t chunk = 0;   // Prompt chunk size; 0: one batch.
  int threads = 0;
  std::string out_path;
};

absl::StatusOr<std::vector<int32_t>> ParseTokenIds(const std::string& text) {
  std::vector<int32_t> ids;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    char* end = nullptr;
    const long v = std::strtol(word.c_str(), &end, 10);
    if (*end != '\0' || v < 0 || v > INT32_MAX) {
      return absl::InvalidArgumentError(StrCat("--tokens: '", word, "' is not a token id"));
    }
    ids.push_back(static_cast<int32_t>(v));
  }
  if (ids.empty()) return absl::InvalidArgumentError("--tokens: no token ids given");
  return ids;
}

int RunLogits(const LogitsOptions& o) {
  auto ids = ParseTokenIds(o.tokens);
  if (!ids.ok()) return ReportError(ids.status());
  auto kv_type = ParseKvType(o.kv_type);
  if (!kv_type.ok()) return ReportError(kv_type.status());
  auto model = LoadModel(o.model_path, ComputeDevice::Cpu());
  if (!model.ok()) return ReportError(model.status());
  const ModelConfig& c = (*model)->config();
  const int64_t n = static_cast<int64_t>(ids->size());
  if (n > c.n_ctx_train) {
    return ReportError(StrCat("--tokens: ", n, " tokens exceed the context of ", c.n_ctx_train));
  }
  ModelRunnerOptions ro;
  ro.positions = n;
  ro.kv_type = *kv_type;
  ro.threads = o.threads > 0 ? o.threads : PhysicalCores();
  auto runner = ModelRunner::Create(**model, ro);
  if (!runner.ok()) return ReportError(runner.status());
  std::vector<float> all;
  all.reserve(static_cast<size_t>(n * c.n_vocab));
  const int64_t chunk = o.chunk > 0 ? o.chunk : n;
  ForwardOutput out;  // One for every chunk: a GPU's page-locked rows are locked once.
  for (int64_t start = 0; start < n; start += chunk) {
    Batch batch;
    for (int64_t t = start; t < std::min(n, start + chunk); ++t) {
      batch.Add((*ids)[t], static_cast<int32_t>(t), 0, true);
    }
    if (absl::Status s = (*runner)->Forward(batch, out); !s.ok()) {
      return ReportError(s);
    }
    all.insert(all.end(), out.values.begin(), out.values.end());
  }
  std::FILE* f = std::fopen(o.out_path.c_str(), "wb");
  if (f == nullptr) return ReportError(StrCat(o.out_path, ": cannot create"));
  const bool ok = std::fwrite(all.data(), sizeof(float), all.size(), f) == all.size();
  if (std::fclose(f) != 0 || !ok) return ReportError(StrCat(o.out_path, ": write failed"));
  return 0;
}

}  // namespace

Command AddLogitsCommand(CLI::App& parent) {
  auto o = std::make_shared<LogitsOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "logits", "Write the logits at every position of a token sequence (float32)");
  cmd->add_option("-m,--model", o->model_path, "GGUF model")->required();
  cmd->add_option("--tokens", o->tokens, "Token ids, space-separated")->required();
  cmd->add_option("--kv-type", o->kv_type, "KV cache type: f16, f32 or q8_0 (default f32)");
  cmd->add_option("--chunk", o->chunk, "Prompt chunk size (default: all at once)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--threads", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--out,-o", o->out_path, "Output file")->required();
  return {cmd, [o] { return RunLogits(*o); }};
}

}  // namespace swiftlet::cli
