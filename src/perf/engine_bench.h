// swiftlet bench engine: how fast the engine's forward runs on this machine,
// measured in-process (no HTTP), and how close it comes to the machine's
// limits (perf/machine_limits.h) by the roofline of perf/roofline.h.
//
// Tests, each a warm-up run and then `repeat` timed runs whose median tok/s
// is reported:
//   ppP      one Forward of P prompt tokens in one sequence, logits of the
//            last row only; tok/s = P / time.
//   tgG      G decode steps of one token each after a short prompt (untimed);
//            tok/s = G / time.
//   tgG@bB   B sequences in B KV slots, each after its own short prompt; each
//            step is one Batch of B tokens, one per sequence; tok/s =
//            B * G / time.
// Decode steps are greedy by default: each row's argmax comes back, not its
// logits (Batch::argmax_rows), as for a greedy request in the engine. With
// sampling parameters that draw (EngineBenchOptions::sampling), each row's
// logits come back instead (n_vocab floats a row, off the device on a GPU)
// and are drawn from on the host as the engine draws a sampled request's
// (Sampler::Sample on the row in place), the rows spread over the
// host's threads (ModelRunner::host_pool); the draw's share of a step is
// timed apart. The drawn ids are not fed back: the next step's tokens come
// from the same stream as a greedy run's, so both run the same forwards.
// Tokens are deterministic pseudo-random ids in the vocabulary: the forward
// is measured, not sampling or tokenization.
//
// The read bandwidth is measured before the tests and again after each one;
// the best of those measurements is the bandwidth every limit uses.
//
// The limit of each test is the model's roofline (perf/roofline.h) at the
// test's tokens per weight pass and attended context.
//
// Everything here runs on the calling thread (plus the backend's pool).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "perf/machine_limits.h"
#include "perf/model_shape.h"
#include "perf/roofline.h"

namespace swiftlet {

struct ModelConfig;  // model/model_config.h

// ---- The benchmark ---------------------------------------------------------

// How decode steps choose their tokens, as the API's parameters of those
// names (engine/sampling.h's SamplingParams, without penalties): temperature
// 0 is greedy (argmax rows on the backend); above 0 each row's logits come
// back and are drawn from on the host. Ranges as ValidateSamplingParams's.
struct DecodeSampling {
  float temperature = 0.0f;
  int32_t top_k = 0;    // 0: off
  float top_p = 1.0f;   // 1: off
  float min_p = 0.0f;   // 0: off
  bool greedy() const { return temperature == 0.0f; }
};

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
  DecodeSampling sampling;
  // >= 0: run on that CUDA GPU (its index) instead of the CPU. There the
  // limit is its measured HBM read bandwidth alone (its compute peaks are
  // not measured yet), so each result reads as a share of that bandwidth.
  int cuda_gpu = -1;
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
  // The test's geometry (EngineBenchTest), so a reader of the report (the
  // capacity planner's calibration) need not parse the name.
  bool prompt = false;
  int64_t batch = 1;
  int64_t tokens_per_pass = 1;
  double mean_context = 0;
  double tok_s = 0;          // Median over the timed runs.
  std::vector<double> runs;  // tok/s of each timed run.
  // Sampled decode only: the host's draw of a step's rows, µs a step
  // (median over the timed runs; part of the time tok/s counts).
  double draw_us_per_step = 0;
  double limit_tok_s = 0;
  double memory_bound_tok_s = 0;
  double compute_bound_tok_s = 0;
  bool compute_bound = false;
  double pct_of_limit = 0;
};

struct EngineBenchReport {
  std::string cpu;  // On the GPU: the GPU's name.
  std::string isa;  // KernelIsaName(ChosenKernelIsa()), or "cuda"
  MachineLimits limits;
  std::string model_path;
  std::string arch;
  int64_t context_train = 0;
  ModelShape shape;  // What the planner needs to scale these results to another model.
  TensorType kv_type = TensorType::kF16;
  DecodeSampling sampling;
  int host_threads = 1;  // The sampled draw's threads.
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
