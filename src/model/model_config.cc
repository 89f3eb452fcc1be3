#include "model/model_config.h"

#include "core/str_cat.h"
#include "gguf/gguf_file.h"

namespace swiftlet {
namespace {

// Bounds far above any real model, low enough that products of them stay
// far from overflow in 64-bit sizes.
constexpr int64_t kMaxDim = int64_t{1} << 20;
constexpr int64_t kMaxLayers = 1024;
constexpr int64_t kMaxContext = int64_t{1} << 24;

absl::Status Invalid(const GgufFile& f, const std::string& what) {
  return absl::InvalidArgumentError(StrCat(f.name(), ": ", what));
}

absl::StatusOr<int64_t> ReadCount(const GgufFile& f, const std::string& key,
                                  int64_t max) {
  SWIFTLET_ASSIGN_OR_RETURN(int64_t v, f.GetInt(key));
  if (v <= 0 || v > max) {
    return Invalid(f, StrCat("metadata '", key, "' = ", v, " is out of range (1 to ", max, ")"));
  }
  return v;
}

// An optional count: `fallback` when the key is absent.
absl::StatusOr<int64_t> ReadCountOr(const GgufFile& f, const std::string& key,
                                    int64_t max, int64_t fallback) {
  if (f.Find(key) == nullptr) return fallback;
  return ReadCount(f, key, max);
}

absl::StatusOr<double> ReadPositiveOr(const GgufFile& f, const std::string& key,
                                      double fallback) {
  if (f.Find(key) == nullptr) return fallback;
  SWIFTLET_ASSIGN_OR_RETURN(double v, f.GetFloat(key));
  if (!(v > 0) || v > 1e12) {
    return Invalid(f, StrCat("metadata '", key, "' = ", v, " is out of range"));
  }
  return v;
}

}  // namespace

std::string_view ArchitectureName(Architecture arch) {
  switch (arch) {
    case Architecture::kLlama: return "llama";
    case Architecture::kQwen2: return "qwen2";
    case Architecture::kQwen3: return "qwen3";
  }
  return "unknown";
}

absl::StatusOr<Architecture> ArchitectureFromName(std::string_view name) {
  for (Architecture a : {Architecture::kLlama, Architecture::kQwen2, Architecture::kQwen3}) {
    if (ArchitectureName(a) == name) return a;
  }
  return absl::InvalidArgumentError(StrCat("unsupported architecture '", name,
                                           "' (supported: llama, qwen2, qwen3)"));
}

absl::StatusOr<ModelConfig> ReadModelConfig(const GgufFile& f) {
  ModelConfig c;
  SWIFTLET_ASSIGN_OR_RETURN(std::string arch_name, f.GetString("general.architecture"));
  auto arch = ArchitectureFromName(arch_name);
  if (!arch.ok()) return Invalid(f, std::string(arch.status().message()));
  c.arch = *arch;
  const std::string p = arch_name + ".";

  SWIFTLET_ASSIGN_OR_RETURN(c.n_embd, ReadCount(f, p + "embedding_length", kMaxDim));
  SWIFTLET_ASSIGN_OR_RETURN(c.n_layer, ReadCount(f, p + "block_count", kMaxLayers));
  SWIFTLET_ASSIGN_OR_RETURN(c.n_ff, ReadCount(f, p + "feed_forward_length", kMaxDim));
  SWIFTLET_ASSIGN_OR_RETURN(c.n_head, ReadCount(f, p + "attention.head_count", kMaxDim));
  SWIFTLET_ASSIGN_OR_RETURN(c.n_head_kv,
                            ReadCountOr(f, p + "attention.head_count_kv", kMaxDim, c.n_head));
  SWIFTLET_ASSIGN_OR_RETURN(c.n_ctx_train, ReadCount(f, p + "context_length", kMaxContext));
  if (c.n_head % c.n_head_kv != 0) {
    return Invalid(f, StrCat("attention.head_count ", c.n_head,
                             " is not a multiple of attention.head_count_kv ", c.n_head_kv));
  }
  const int64_t default_head_dim = c.n_embd % c.n_head == 0 ? c.n_embd / c.n_head : 0;
  SWIFTLET_ASSIGN_OR_RETURN(c.head_dim,
                            ReadCountOr(f, p + "attention.key_length", kMaxDim, default_head_dim));
  SWIFTLET_ASSIGN_OR_RETURN(int64_t value_dim,
                            ReadCountOr(f, p + "attention.value_length", kMaxDim, c.head_dim));
  if (c.head_dim == 0) {
    return Invalid(f, StrCat("embedding_length ", c.n_embd, " is not a multiple of head_count ",
                             c.n_head, " and attention.key_length is not given"));
  }
  if (value_dim != c.head_dim || c.head_dim % 2 != 0) {
    return Invalid(f, StrCat("head dimension ", c.head_dim, " (value ", value_dim,
                             ") must be even and equal for keys and values"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(c.rope_dim,
                            ReadCountOr(f, p + "rope.dimension_count", c.head_dim, c.head_dim));
  if (c.rope_dim % 2 != 0) {
    return Invalid(f, StrCat("rope.dimension_count ", c.rope_dim, " must be even"));
  }
  SWIFTLET_ASSIGN_OR_RETURN(c.rms_eps,
                            ReadPositiveOr(f, p + "attention.layer_norm_rms_epsilon", 1e-5));
  SWIFTLET_ASSIGN_OR_RETURN(c.rope_freq_base, ReadPositiveOr(f, p + "rope.freq_base", 10000.0));
  if (const GgufValue* v = f.Find(p + "rope.scaling.type"); v != nullptr) {
    SWIFTLET_ASSIGN_OR_RETURN(std::string type, f.GetString(p + "rope.scaling.type"));
    if (type == "linear") {
      c.rope_scaling = RopeScaling::kLinear;
    } else if (type == "llama3") {
      c.rope_scaling = RopeScaling::kLlama3;
    } else if (type != "none") {
      return Invalid(f, StrCat("rope.scaling.type '", type, "' is not supported"));
    }
  }
  SWIFTLET_ASSIGN_OR_RETURN(
      c.rope_scaling_factor,
      ReadPositiveOr(f, p + "rope.scaling.factor", c.rope_scaling == RopeScaling::kLlama3 ? 8.0 : 1.0));
  SWIFTLET_ASSIGN_OR_RETURN(c.rope_low_freq_factor,
                            ReadPositiveOr(f, p + "rope.scaling.low_freq_factor", 1.0));
  SWIFTLET_ASSIGN_OR_RETURN(c.rope_high_freq_factor,
                            ReadPositiveOr(f, p + "rope.scaling.high_freq_factor", 4.0));
  SWIFTLET_ASSIGN_OR_RETURN(
      c.rope_original_context,
      ReadCountOr(f, p + "rope.scaling.original_context_length", kMaxContext, 8192));
  if (c.rope_high_freq_factor <= c.rope_low_freq_factor) {
    return Invalid(f, "rope.scaling.high_freq_factor must exceed low_freq_factor");
  }

  const GgufValue* tokens = f.Find("tokenizer.ggml.tokens");
  if (tokens != nullptr && tokens->is_array()) {
    c.n_vocab = static_cast<int64_t>(tokens->array_size());
  } else {
    SWIFTLET_ASSIGN_OR_RETURN(c.n_vocab, ReadCount(f, p + "vocab_size", int64_t{1} << 24));
  }
  if (c.n_vocab <= 0 || c.n_vocab > (int64_t{1} << 24)) {
    return Invalid(f, StrCat("vocabulary size ", c.n_vocab, " is out of range"));
  }

  c.rope_neox = c.arch != Architecture::kLlama;
  c.qkv_bias = c.arch == Architecture::kQwen2;
  c.qk_norm = c.arch == Architecture::kQwen3;
  c.tied_embeddings = f.FindTensor("output.weight") == nullptr;
  if (f.Find(p + "pooling_type") != nullptr) {
    const absl::StatusOr<int64_t> pooling = f.GetInt(p + "pooling_type");
    c.pooling_type = pooling.ok() && *pooling >= 0 ? *pooling : ModelConfig::kPoolingMalformed;
  }
  return c;
}

}  // namespace swiftlet
