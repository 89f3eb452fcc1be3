// swiftlet bench engine: how fast the engine's forward runs on this machine,
// measured in-process (no HTTP), and how close it comes to the machine's
// limits (kernels/machine_limits.h).
//
// Tests, each a warm-up run and then `repeat` timed runs whose median tok/s
// is reported:
//   ppP      one Forward of P prompt tokens in one sequence, logits of the
//            last row only; tok/s = P / time.
//   tgG      G decode steps of one token each after a short prompt (untimed);
//            tok/s = G / time.
//   tgG@bB   B sequences in B KV slots, each after its own short prompt; each
//            step is one Batch of B tokens, one per sequence, all with
//            logits; tok/s = B * G / time.
// Tokens are deterministic pseudo-random ids in the vocabulary: the forward
// is measured, not sampling or tokenization.
//
// The read bandwidth is measured before the tests and again after each one;
// the best of those measurements is the bandwidth every limit uses.
//
// The limit of a test is a roofline: the lower of
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
//
// Everything here runs on the calling thread (plus the backend's pool).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "gguf/gguf_file.h"
#include "kernels/machine_limits.h"
#include "model/model_config.h"

namespace swiftlet {

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

// Counts the cost from the file's tensor table. Fails when a tensor the
// config calls for is missing.
absl::StatusOr<ModelCost> ComputeModelCost(const ModelConfig& config, const GgufFile& file);

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

// The middle value (the mean of the two middle ones for an even count); 0
// for none.
double Median(std::vector<double> values);

// ---- The benchmark ---------------------------------------------------------

struct EngineBenchOptions {
  std::string model_path;
  int64_t prompt_tokens = 128;
  int64_t gen_tokens = 64;
  std::vector<int64_t> batch_sizes = {1, 4, 16};  // 1 is the plain tg test.
  int threads = 0;                                // 0: all physical cores.
  int repeat = 3;
  bool quick_limits = false;  // Short machine-limit measurements (tests).
  TensorType kv_type = TensorType::kF16;
  uint64_t max_memory_bytes = uint64_t{8} << 30;  // KV cache + activations.
};

inline constexpr int64_t kMaxGenTokens = 4096;
inline constexpr int64_t kMaxBatch = 256;
inline constexpr int kMaxRepeat = 100;
// Prompt length before the timed decode steps of the tg tests.
inline constexpr int64_t kShortPrompt = 8;

// One planned test.
struct EngineBenchTest {
  std::string name;     // "pp128", "tg64", "tg64@b16"
  bool prompt = false;  // pp (else tg)
  int64_t batch = 1;    // Sequences (tg)
  int64_t tokens_per_pass = 1;
  double mean_context = 0;  // Average attended positions per token.
};

// The sizes a run needs, from validated options.
struct EngineBenchPlan {
  std::vector<EngineBenchTest> tests;
  int64_t short_prompt = 0;
  int64_t n_ctx = 0;    // KV positions per slot.
  int64_t n_slots = 0;  // KV slots = the largest batch.
  uint64_t kv_bytes = 0;
  uint64_t activation_bytes = 0;  // Forward scratch at the largest batch.
};

// Checks the options against the model (ranges, context, memory cap) and
// plans the tests. Errors name the flag.
absl::StatusOr<EngineBenchPlan> PlanEngineBench(const EngineBenchOptions& options,
                                                const ModelConfig& config);

struct EngineBenchResult {
  std::string test;
  double tok_s = 0;          // Median over the timed runs.
  std::vector<double> runs;  // tok/s of each timed run.
  double limit_tok_s = 0;
  double memory_bound_tok_s = 0;
  double compute_bound_tok_s = 0;
  bool compute_bound = false;
  double pct_of_limit = 0;
};

struct EngineBenchReport {
  std::string cpu;
  std::string isa;  // KernelIsaName(ChosenKernelIsa())
  MachineLimits limits;
  std::string model_path;
  std::string arch;
  int64_t context_train = 0;
  ModelCost cost;
  std::vector<EngineBenchResult> results;
};

// One line of progress for stderr.
using BenchProgressFn = std::function<void(const std::string& line)>;

// Loads the model, validates the options, measures the machine's limits,
// then runs the tests. Errors are one line naming the file or flag.
absl::StatusOr<EngineBenchReport> RunEngineBench(const EngineBenchOptions& options,
                                                 const BenchProgressFn& progress);

}  // namespace swiftlet
