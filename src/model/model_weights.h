// The weights of a loaded model as the forward pass reads them: typed views
// bound once at load (mmapped, or repacked for this CPU), never looked up by
// name while running. Private to model/: its users see Model.
#pragma once

#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/packed_weights.h"

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
  // The repacked copies the views above point into (kernels/packed_weights.h).
  std::vector<std::unique_ptr<PackedWeight>> packed;
};

}  // namespace swiftlet
