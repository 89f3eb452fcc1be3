// The roofline of a model on a machine: what a token costs (bytes of weights
// streamed, multiply-adds at the int8 and fp32 peaks) and the tok/s limits
// that follow from a machine's read bandwidth and peaks
// (perf/machine_limits.h). Pure arithmetic on counts; the engine benchmark
// (perf/engine_bench.h) states its results against it, and the capacity
// planner will build on it.
//
// The limit of a run is the lower of
//   memory bound  = read bandwidth x tokens per weight pass / weight bytes
//                   per token (P for pp, 1 for tg, B for tg@bB), and
//   compute bound = 1 / (int8 ops per token / int8 peak
//                        + float ops per token / fp32 peak).
// Ops per token count 2 per multiply-add: every matrix a token passes through
// (per layer wq wk wv wo gate up down, then the head), at the int8 peak for
// quantized weights (their activations are quantized to int8) and at the
// fp32 peak for F32/F16/BF16 weights; plus attention, computed in float:
// 2 x 2 x n_head x head_dim multiply-adds per layer per attended position
// (QK^T and PV), with the attended context averaged over the test's
// positions. KV-cache reads, norms, RoPE and the embedding row gather are
// not counted: they are small next to the weights for these tests.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"

namespace swiftlet {

class Model;              // model/model.h
struct ModelConfig;       // model/model_config.h
struct TensorInfo;        // model/model.h

// ---- What a token costs a model -------------------------------------------

struct TensorTypeTotal {
  TensorType type = TensorType::kF32;
  uint64_t tensors = 0;
  uint64_t bytes = 0;
};

struct ModelCost {
  uint64_t n_params = 0;  // Elements of every tensor in the file.
  // Bytes of the matrices a token streams: each layer's wq wk wv wo gate up
  // down, and the head (output.weight, or token_embd.weight when tied). An
  // untied embedding table is not counted: a token gathers one row of it.
  uint64_t weight_bytes_per_token = 0;
  uint64_t int8_macs_per_token = 0;   // Multiply-adds on quantized weights.
  uint64_t float_macs_per_token = 0;  // Multiply-adds on F32/F16/BF16 weights.
  // Attention multiply-adds per token per attended position, all layers:
  // n_layer x 2 x n_head x head_dim.
  uint64_t attn_macs_per_position = 0;
  std::vector<TensorTypeTotal> types;  // Every tensor of the file, by type.
};

// Counts the cost from the model's tensor table. Fails when a tensor the
// config calls for is missing.
absl::StatusOr<ModelCost> ComputeModelCost(const Model& model);
// The same count from a config and a tensor table alone, for models that are
// never loaded (perf/model_shape.h: a GGUF header, or a shape and a format).
absl::StatusOr<ModelCost> ComputeModelCost(const ModelConfig& config,
                                           const std::vector<TensorInfo>& tensors);

// ---- Limit arithmetic ------------------------------------------------------

// Tokens per second when every weight byte is read once per pass of
// `tokens_per_pass` tokens at `bandwidth_gbs` (1e9 bytes/s).
double MemoryBoundTokS(double bandwidth_gbs, uint64_t weight_bytes_per_token,
                       int64_t tokens_per_pass);

// Tokens per second when compute alone binds, at an average attended context
// of `mean_context` positions. 0 when a needed peak is not positive.
double ComputeBoundTokS(const ModelCost& cost, double int8_peak_gops, double fp32_peak_gflops,
                        double mean_context);

struct Roofline {
  double tok_s = 0;
  bool compute_bound = false;  // The compute bound is the lower one.
};
Roofline RooflineLimit(double memory_bound_tok_s, double compute_bound_tok_s);

// 100 x measured / limit; 0 when the limit is not positive.
double PercentOfLimit(double tok_s, double limit_tok_s);

}  // namespace swiftlet
