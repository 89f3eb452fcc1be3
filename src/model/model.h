// A loaded Llama-family model: config and weights bound once at load,
// immutable afterwards, shared by any number of threads. Forward() is written
// once against the Backend interface; per-step scratch lives in a
// ForwardContext owned by the calling (engine) thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "kernels/backend.h"
#include "kernels/packed_weights.h"
#include "kv/kv_store.h"
#include "model/batch.h"
#include "model/model_config.h"

namespace swiftlet {

struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  WeightView wq;                 // [n_embd -> n_head*head_dim]
  WeightView wk;                 // [n_embd -> n_head_kv*head_dim]
  WeightView wv;                 // [n_embd -> n_head_kv*head_dim]
  std::vector<float> bq, bk, bv;  // qwen2 biases, empty otherwise
  std::vector<float> q_norm, k_norm;  // qwen3 per-head norms [head_dim], empty otherwise
  WeightView wo;                 // [n_head*head_dim -> n_embd]
  std::vector<float> ffn_norm;   // [n_embd]
  WeightView w_gate;             // [n_embd -> n_ff]
  WeightView w_up;               // [n_embd -> n_ff]
  WeightView w_down;             // [n_ff -> n_embd]
};

struct ModelWeights {
  WeightView token_embd;         // [n_embd x n_vocab] rows looked up by token
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;  // [n_embd]
  WeightView output;             // [n_embd -> n_vocab]; token_embd when tied
  std::vector<float> rope_freq_factors;  // [rope_dim/2] Llama 3 scaling, or empty
};

// Scratch buffers for one forward pass, reused across steps.
struct ForwardContext {
  std::vector<float> x, h, q, k, v, attn, gate, up, tmp, out_rows;
  std::vector<KvRows> kv_rows;
};

// Llama 3's per-pair RoPE frequency divisors, from the config's scaling
// parameters (for files that do not carry rope_freqs.weight).
std::vector<float> Llama3FreqFactors(const ModelConfig& config);

class Model {
 public:
  // Opens, validates and binds `path`. Errors name the file and the tensor
  // or key at fault.
  static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& path);

  const ModelConfig& config() const { return config_; }
  const GgufFile& file() const { return *file_; }

  // Runs `batch`: writes each token's K/V into `cache` for its sequence (slot) at its
  // position, then fills `out` for the batch's output rows. Tokens of one
  // sequence must come in position order, and every earlier position of the
  // sequence must already be in the cache or earlier in this batch.
  absl::Status Forward(const Batch& batch, KvStore& cache, Backend& backend, ForwardContext& ctx,
                       ForwardOutput& out) const;

 private:
  Model() = default;
  // Repacks every matrix whose type has a faster layout on this CPU
  // (kernels/packed_weights.h); the views then point at the packed copies.
  void PackMatrices();

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::vector<std::unique_ptr<PackedWeight>> packed_;
};

}  // namespace swiftlet
