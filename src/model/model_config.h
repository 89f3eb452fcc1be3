// Hyperparameters of a Llama-family model, read from GGUF metadata.
//
// One config describes every supported architecture; the differences
// between them (QKV bias, QK-norm, RoPE layout, tied embeddings) are flags
// here, not separate code paths.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace swiftlet {

class GgufFile;  // gguf/gguf_file.h

enum class Architecture { kLlama, kQwen2, kQwen3 };

// "llama", "qwen2", "qwen3".
std::string_view ArchitectureName(Architecture arch);
absl::StatusOr<Architecture> ArchitectureFromName(std::string_view name);

enum class RopeScaling { kNone, kLinear, kLlama3 };

struct ModelConfig {
  Architecture arch = Architecture::kLlama;
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;  // Context length the model was trained for.
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;     // Per head, for Q, K and V alike.
  int64_t n_ff = 0;
  double rms_eps = 1e-5;
  double rope_freq_base = 10000.0;
  int64_t rope_dim = 0;     // Rotated dimensions per head (<= head_dim).
  bool rope_neox = false;   // NeoX layout rotates pairs (i, i + d/2).
  RopeScaling rope_scaling = RopeScaling::kNone;
  double rope_scaling_factor = 1.0;
  // Llama 3 scaling, used when the file has no rope_freqs.weight tensor.
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  int64_t rope_original_context = 8192;
  bool qkv_bias = false;    // qwen2
  bool qk_norm = false;     // qwen3
  bool tied_embeddings = false;  // No output.weight: the head reuses token_embd.
  // `<arch>.pooling_type` as the file gives it (0 none, 1 mean, 2 first
  // token, 3 last token, 4 rank), kPoolingAbsent when the key is not there,
  // kPoolingMalformed when it is not an integer. The embedding worker
  // decides what it computes from it.
  int64_t pooling_type = kPoolingAbsent;
  static constexpr int64_t kPoolingAbsent = -1;
  static constexpr int64_t kPoolingMalformed = -2;

  int64_t q_dim() const { return n_head * head_dim; }
  int64_t kv_dim() const { return n_head_kv * head_dim; }
};

// Reads and checks the config: required keys present, every count positive
// and bounded, heads dividing evenly. tied_embeddings is set from the
// absence of output.weight. Errors name the file and the key.
absl::StatusOr<ModelConfig> ReadModelConfig(const GgufFile& file);

}  // namespace swiftlet
