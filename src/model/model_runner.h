// A model with a contiguous KV cache of its own and a forward context: what
// the tools that run fixed sequences need (`swiftlet run`, `tools logits`,
// `bench engine`) and tests. The engine, which schedules many requests over
// a paged cache, does not use it.
//
// Not thread-safe. The model must outlive the runner.
#pragma once

#include <cstdint>
#include <memory>

#include "core/status.h"
#include "core/tensor_type.h"
#include "model/batch.h"

namespace swiftlet {

class ComputePool;  // core/thread_pool.h
class Model;

struct ModelRunnerOptions {
  int64_t slots = 1;        // Sequences held at once (a Batch's slots 0..slots-1).
  int64_t positions = 0;    // Per slot, > 0.
  TensorType kv_type = TensorType::kF16;  // F16, F32 or Q8_0.
  int threads = 1;          // CPU backend threads, >= 1.
  uint64_t max_kv_bytes = uint64_t{8} << 30;
};

class ModelRunner {
 public:
  // Errors name the type, the sizes or the bytes.
  static absl::StatusOr<std::unique_ptr<ModelRunner>> Create(const Model& model,
                                                             const ModelRunnerOptions& options);
  ~ModelRunner();

  // Model::Forward on the runner's cache and context. A slot's positions
  // are overwritten when fed again, so a runner can be reused from position
  // 0 without a reset.
  absl::Status Forward(const Batch& batch, ForwardOutput& out);

  const ModelRunnerOptions& options() const { return options_; }

  // The host's `threads` threads (the caller included), for host work on a
  // forward's outputs between forwards, as the engine draws a step's
  // sampled rows: on the CPU the forward's own threads, idle then; on a GPU
  // threads of their own.
  ComputePool& host_pool();

 private:
  struct Parts;
  ModelRunner(const Model& model, const ModelRunnerOptions& options, std::unique_ptr<Parts> parts);

  const Model& model_;
  const ModelRunnerOptions options_;
  std::unique_ptr<Parts> parts_;
};

}  // namespace swiftlet
