#include "model/tensor_layout.h"

#include "core/str_cat.h"
#include "gguf/gguf_file.h"

namespace swiftlet {

std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& c) {
  std::vector<ExpectedTensor> out;
  auto add = [&](std::string name, std::vector<int64_t> shape, TensorRole role, int layer) {
    out.push_back({std::move(name), std::move(shape), role, layer});
  };
  add("token_embd.weight", {c.n_embd, c.n_vocab}, TensorRole::kEmbedding, -1);
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string b = StrCat("blk.", i, ".");
    add(b + "attn_norm.weight", {c.n_embd}, TensorRole::kNorm, i);
    add(b + "attn_q.weight", {c.n_embd, c.q_dim()}, TensorRole::kAttnQ, i);
    add(b + "attn_k.weight", {c.n_embd, c.kv_dim()}, TensorRole::kAttnK, i);
    add(b + "attn_v.weight", {c.n_embd, c.kv_dim()}, TensorRole::kAttnV, i);
    if (c.qkv_bias) {
      add(b + "attn_q.bias", {c.q_dim()}, TensorRole::kBias, i);
      add(b + "attn_k.bias", {c.kv_dim()}, TensorRole::kBias, i);
      add(b + "attn_v.bias", {c.kv_dim()}, TensorRole::kBias, i);
    }
    if (c.qk_norm) {
      add(b + "attn_q_norm.weight", {c.head_dim}, TensorRole::kNorm, i);
      add(b + "attn_k_norm.weight", {c.head_dim}, TensorRole::kNorm, i);
    }
    add(b + "attn_output.weight", {c.q_dim(), c.n_embd}, TensorRole::kAttnOutput, i);
    add(b + "ffn_norm.weight", {c.n_embd}, TensorRole::kNorm, i);
    add(b + "ffn_gate.weight", {c.n_embd, c.n_ff}, TensorRole::kFfnGate, i);
    add(b + "ffn_up.weight", {c.n_embd, c.n_ff}, TensorRole::kFfnUp, i);
    add(b + "ffn_down.weight", {c.n_ff, c.n_embd}, TensorRole::kFfnDown, i);
  }
  add("output_norm.weight", {c.n_embd}, TensorRole::kNorm, -1);
  if (!c.tied_embeddings) add("output.weight", {c.n_embd, c.n_vocab}, TensorRole::kOutput, -1);
  return out;
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += StrCat(i ? ", " : "", shape[i]);
  return s + "]";
}

absl::Status ValidateTensors(const ModelConfig& config, const GgufFile& file) {
  for (const ExpectedTensor& e : ExpectedTensors(config)) {
    const GgufTensor* t = file.FindTensor(e.name);
    if (t == nullptr) {
      return absl::InvalidArgumentError(
          StrCat(file.name(), ": tensor '", e.name, "' is missing (", ArchitectureName(config.arch),
                 " with ", config.n_layer, " layers needs it)"));
    }
    std::vector<int64_t> actual(t->ne.begin(), t->ne.begin() + t->n_dims);
    if (actual != e.shape) {
      return absl::InvalidArgumentError(StrCat(file.name(), ": tensor '", e.name, "' has shape ",
                                               ShapeString(actual), ", expected ",
                                               ShapeString(e.shape), " from the hyperparameters"));
    }
  }
  return absl::OkStatus();
}

}  // namespace swiftlet
