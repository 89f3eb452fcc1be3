#include "plan/presets.h"


#include "absl/strings/ascii.h"
#include "core/str_cat.h"

namespace swiftlet::plan {
namespace {

ModelShape Shape(std::string arch, int64_t vocab, int64_t ctx, int64_t embd, int64_t layers,
                 int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t ffn, bool tied) {
  ModelShape s;
  s.arch = std::move(arch);
  s.n_vocab = vocab;
  s.n_ctx_train = ctx;
  s.n_embd = embd;
  s.n_layer = layers;
  s.n_head = heads;
  s.n_head_kv = kv_heads;
  s.head_dim = head_dim;
  s.n_ff = ffn;
  s.tied_embeddings = tied;
  return s;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  // The published configs (config.json) of each model.
  static const std::vector<ModelPreset> presets = {
      {"qwen2.5-0.5b", "0.5b", "Qwen2.5-0.5B",
       Shape("qwen2", 151936, 32768, 896, 24, 14, 2, 64, 4864, true)},
      {"qwen2.5-1.5b", "1.5b", "Qwen2.5-1.5B",
       Shape("qwen2", 151936, 32768, 1536, 28, 12, 2, 128, 8960, true)},
      {"qwen2.5-7b", "7b", "Qwen2.5-7B",
       Shape("qwen2", 152064, 32768, 3584, 28, 28, 4, 128, 18944, false)},
      {"llama3.1-8b", "8b", "Llama-3.1-8B",
       Shape("llama", 128256, 131072, 4096, 32, 32, 8, 128, 14336, false)},
      {"qwen2.5-14b", "14b", "Qwen2.5-14B",
       Shape("qwen2", 152064, 32768, 5120, 48, 40, 8, 128, 13824, false)},
      {"qwen2.5-32b", "32b", "Qwen2.5-32B",
       Shape("qwen2", 152064, 32768, 5120, 64, 40, 8, 128, 27648, false)},
      {"llama3.1-70b", "70b", "Llama-3.1-70B",
       Shape("llama", 128256, 131072, 8192, 80, 64, 8, 128, 28672, false)},
      // The shapes `swiftlet tools make-model --preset` writes.
      {"tinyllama-1.1b", "", "TinyLlama-1.1B",
       Shape("llama", 32000, 2048, 2048, 22, 32, 4, 64, 5632, false)},
      {"smollm2-135m", "", "SmolLM2-135M",
       Shape("llama", 49152, 8192, 576, 30, 9, 3, 64, 1536, true)},
      {"qwen3-0.6b", "", "Qwen3-0.6B",
       Shape("qwen3", 151936, 40960, 1024, 28, 16, 8, 128, 3072, true)},
  };
  return presets;
}

absl::StatusOr<ModelPreset> FindModelPreset(std::string_view name) {
  std::string want(name);
  absl::AsciiStrToLower(&want);
  for (const ModelPreset& p : ModelPresets()) {
    if (want == p.name || (!p.alias.empty() && want == p.alias)) return p;
  }
  return absl::InvalidArgumentError(
      StrCat("--preset: unknown model '", name, "' (choose one of ", ModelPresetNames(), ")"));
}

std::string ModelPresetNames() {
  std::string out;
  for (const ModelPreset& p : ModelPresets()) {
    if (!out.empty()) out += ", ";
    out += p.alias.empty() ? std::string(p.name) : StrCat(p.alias, " (", p.name, ")");
  }
  return out;
}

}  // namespace swiftlet::plan
