// swiftlet tools make-model: writes a model with seeded random weights.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "cli/command.h"
#include "cli/format.h"
#include "core/parallel_for.h"
#include "core/str_cat.h"
#include "model/random_model.h"

namespace swiftlet::cli {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 20;

template <typename T>
void AddOptional(CLI::App* app, const std::string& flag, std::optional<T>& target,
                 const std::string& help, int64_t max) {
  app->add_option_function<int64_t>(flag, [&target](int64_t v) { target = static_cast<T>(v); }, help)
      ->check(CLI::Range(int64_t{1}, max));
}

struct MakeModelOptions {
  std::string out_path;
  std::string preset = "tiny";
  // Unset fields keep the preset's value.
  std::optional<std::string> arch;
  std::optional<int64_t> hidden, layers, heads, kv_heads, head_dim, ffn, context;
  std::optional<double> rope_base;
  bool tied = false;
  std::string type = "F32";
  std::string vocab_path;
  int64_t vocab_size = 0;  // 0: the synthetic vocabulary's own size.
  uint64_t seed = 1;
  int threads = 0;
};

int RunMakeModel(const MakeModelOptions& o) {
  auto preset = RandomModelPreset(o.preset);
  if (!preset.ok()) return ReportError(preset.status());
  RandomModelSpec spec = *preset;
  if (o.arch) {
    auto arch = ArchitectureFromName(*o.arch);
    if (!arch.ok()) return ReportError(StrCat("--arch: ", arch.status().message()));
    spec.arch = *arch;
  }
  if (o.hidden) spec.n_embd = *o.hidden;
  if (o.layers) spec.n_layer = *o.layers;
  if (o.heads) spec.n_head = *o.heads;
  if (o.kv_heads) spec.n_head_kv = *o.kv_heads;
  if (o.head_dim) spec.head_dim = *o.head_dim;
  if (o.ffn) spec.n_ff = *o.ffn;
  if (o.context) spec.n_ctx = *o.context;
  if (o.rope_base) spec.rope_freq_base = *o.rope_base;
  if (o.tied) spec.tied_embeddings = true;
  spec.vocab_path = o.vocab_path;
  spec.vocab_size = o.vocab_size;
  spec.seed = o.seed;
  auto target = ParseQuantTarget(o.type);
  if (!target.ok()) return ReportError(StrCat("--type: ", target.status().message()));
  spec.weights = *target;

  const int threads = o.threads > 0 ? o.threads : DefaultThreads();
  int last_decile = -1;
  auto progress = [&](uint64_t done, uint64_t total) {
    if (total < (uint64_t{64} << 20)) return;  // Small models finish at once.
    const int decile = total ? static_cast<int>(10 * done / total) : 10;
    if (decile != last_decile) std::fprintf(stderr, "make-model: %d%%\n", decile * 10);
    last_decile = decile;
  };
  if (absl::Status s = WriteRandomModel(spec, o.out_path, threads, progress); !s.ok()) {
    return ReportError(s);
  }
  std::fprintf(stderr, "make-model: wrote %s\n", o.out_path.c_str());
  return 0;
}

}  // namespace

Command AddMakeModelCommand(CLI::App& parent) {
  auto o = std::make_shared<MakeModelOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "make-model", "Write a Llama-family GGUF with seeded random weights");
  cmd->add_option("--out,-o", o->out_path, "Output GGUF")->required();
  cmd->add_option("--preset", o->preset,
                  StrCat("Shape: ", RandomModelPresetNames()));
  cmd->add_option_function<std::string>(
                                        "--arch", [o](const std::string& v) { o->arch = v; }, "llama, qwen2 or qwen3");
  AddOptional(cmd, "--hidden", o->hidden, "Embedding width", kMaxDim);
  AddOptional(cmd, "--layers", o->layers, "Transformer blocks", 1024);
  AddOptional(cmd, "--heads", o->heads, "Attention heads", kMaxDim);
  AddOptional(cmd, "--kv-heads", o->kv_heads, "Key/value heads", kMaxDim);
  AddOptional(cmd, "--head-dim", o->head_dim, "Head dimension (default hidden/heads)", 1024);
  AddOptional(cmd, "--ffn", o->ffn, "Feed-forward width", kMaxDim);
  AddOptional(cmd, "--context", o->context, "Training context length", int64_t{1} << 24);
  cmd->add_option_function<double>(
                                   "--rope-base", [o](double v) { o->rope_base = v; }, "RoPE frequency base")
      ->check(CLI::Range(1.0, 1e12));
  cmd->add_flag("--tied", o->tied, "No output.weight: the head reuses token_embd");
  cmd->add_option("--type", o->type, "Weight format, as for quantize (default F32)");
  cmd->add_option("--vocab", o->vocab_path,
                  "GGUF whose tokenizer to copy (default: a small synthetic one)");
  cmd->add_option("--vocab-size", o->vocab_size,
                  StrCat("Pad the synthetic vocabulary to this many tokens (", kSyntheticVocabBase, " to ",
                         kMaxSyntheticVocab,
                         "), e.g. a real model's, for its head's size and its sampled rows' length; not with --vocab"));
  cmd->add_option("--seed", o->seed, "Random seed");
  cmd->add_option("--threads", o->threads, "Threads (default: all cores)")
      ->check(CLI::Range(1, 1024));
  return {cmd, [o] { return RunMakeModel(*o); }};
}

}  // namespace swiftlet::cli
