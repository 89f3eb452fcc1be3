// The weights of a loaded model as the forward pass reads them: typed views
// and vectors made ready for the backend once at load (the file's mapped
// bytes, or a copy in the backend's layout and memory), never looked up by
// name while running. Private to model/: its users see Model.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "kernels/backend.h"

namespace swiftlet {

// A float vector in the backend's memory (norm weights, biases, RoPE
// factors); empty when the model has none.
class DeviceVector {
 public:
  DeviceVector() = default;
  DeviceVector(std::unique_ptr<DeviceBuffer> buffer, int64_t size)
      : buffer_(std::move(buffer)), size_(size) {}
  const float* data() const {
    return buffer_ != nullptr ? reinterpret_cast<const float*>(buffer_->data()) : nullptr;
  }
  int64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  std::unique_ptr<DeviceBuffer> buffer_;
  int64_t size_ = 0;
};

struct LayerWeights {
  DeviceVector attn_norm;        // [n_embd]
  WeightView wq;                 // [n_embd -> n_head*head_dim]
  WeightView wk;                 // [n_embd -> n_head_kv*head_dim]
  WeightView wv;                 // [n_embd -> n_head_kv*head_dim]
  DeviceVector bq, bk, bv;       // qwen2 biases, empty otherwise
  DeviceVector q_norm, k_norm;   // qwen3 per-head norms [head_dim], empty otherwise
  WeightView wo;                 // [n_head*head_dim -> n_embd]
  DeviceVector ffn_norm;         // [n_embd]
  WeightView w_gate;             // [n_embd -> n_ff]
  WeightView w_up;               // [n_embd -> n_ff]
  WeightView w_down;             // [n_ff -> n_embd]
};

struct ModelWeights {
  WeightView token_embd;         // [n_embd x n_vocab] rows looked up by token
  std::vector<LayerWeights> layers;
  DeviceVector output_norm;      // [n_embd]
  WeightView output;             // [n_embd -> n_vocab]; token_embd when tied
  DeviceVector rope_freq_factors;  // [rope_dim/2] Llama 3 scaling, or empty
  // What the views above were made from (Backend::PrepareWeight): the
  // copies they point into, if any.
  std::vector<std::unique_ptr<ResidentWeight>> resident;
};

}  // namespace swiftlet
