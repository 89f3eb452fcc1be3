// A model's shape (the hyperparameters that size its tensors and its KV
// cache) and perf/roofline.h's cost counting done from it without loading
// any weights: from a GGUF file's header, or from a shape and a weight
// format (the tensors `swiftlet quantize` would write). For the capacity
// planner (plan/), which sizes models it never runs.
//
// This header shows only perf/ and core/ types, so plan/ uses it without
// seeing model/ or gguf/.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "perf/roofline.h"

namespace swiftlet {

struct ModelConfig;  // model/model_config.h

struct ModelShape {
  std::string arch = "llama";  // "llama", "qwen2" (QKV bias) or "qwen3" (QK norm).
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;  // Per head, for Q, K and V alike.
  int64_t n_ff = 0;
  bool tied_embeddings = false;  // The head reuses token_embd.weight.
};

// What a model costs to hold and to run, counted without its weights.
struct ModelSizing {
  ModelShape shape;
  ModelCost cost;
  uint64_t weights_bytes = 0;  // Every tensor of the model.
  // The file's size; for a counted shape, weights_bytes (the header and
  // vocabulary, a few MB, are not counted).
  uint64_t file_bytes = 0;
  std::string weight_format;  // "Q8_0", "Q4_K_M"; for a file, its commonest type by bytes.
};

// Checks a shape's counts: the architecture is known, each count is
// positive and bounded as the GGUF reader bounds it, heads divide evenly and
// head_dim is even. Errors name the field.
absl::Status CheckModelShape(const ModelShape& shape);

// Counts the model `shape` would be in `weight_format` (any name
// model/quant_rules.h's ParseQuantTarget takes: F16, Q8_0, Q4_K_M, ...),
// with the same per-tensor type rules as `swiftlet quantize`.
absl::StatusOr<ModelSizing> SizeModelShape(const ModelShape& shape, std::string_view weight_format);

// Reads a GGUF file's header (metadata and tensor table, fully validated;
// the weights are mapped but never read) and counts it. Errors name the file.
absl::StatusOr<ModelSizing> SizeModelFile(const std::string& path);

// The names SizeModelShape accepts, for help and errors.
std::string_view WeightFormatNames();

// The shape of a loaded model's config.
ModelShape ShapeOfConfig(const ModelConfig& config);

}  // namespace swiftlet
