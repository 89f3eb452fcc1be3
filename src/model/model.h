// A loaded Llama-family model: config and weights bound once at load,
// immutable afterwards, shared by any number of threads. Forward() is written
// once against the backend interface (kernels/backend.h); the backend and
// per-step scratch live in a ForwardContext owned by the calling (engine)
// thread, the keys and values in a KvStore.
//
// This header shows only model/ and core/ types, so the engine, perf/ and the
// CLI use a model without seeing kernels/, kv/ or gguf/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "model/batch.h"
#include "model/forward_context.h"
#include "model/model_config.h"

namespace swiftlet {

class Backend;      // kernels/backend.h
class GgufFile;     // gguf/gguf_file.h
class KvStore;      // kv/kv_store.h
struct ModelWeights;  // model/model_weights.h (private)

// Llama 3's per-pair RoPE frequency divisors, from the config's scaling
// parameters (for files that do not carry rope_freqs.weight).
std::vector<float> Llama3FreqFactors(const ModelConfig& config);

// One tensor of the model's file, as cost counting (perf/) sees it.
struct TensorInfo {
  std::string name;
  TensorType type = TensorType::kF32;
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
};

class Model {
 public:
  // Repacking, the slow part of a load: `done` of `total` weight matrices,
  // called on the loading thread after each.
  using LoadProgressFn = std::function<void(int64_t done, int64_t total)>;

  // Opens, validates and binds `path`, with the weights made ready on
  // `device` (forwards then need a ForwardContext on the same device).
  // Errors name the file and the tensor or key at fault, or the device's
  // problem. `progress` (may be null) follows the weights' preparation.
  static absl::StatusOr<std::unique_ptr<Model>> Load(const std::string& path,
                                                     const LoadProgressFn& progress = nullptr,
                                                     ComputeDevice device = ComputeDevice::Cpu());
  ~Model();

  const ModelConfig& config() const { return config_; }
  ComputeDevice device() const { return device_; }
  // The file, for readers of its metadata (tokenizer, chat template).
  const GgufFile& file() const { return *file_; }
  // Every tensor of the file, in file order.
  std::vector<TensorInfo> Tensors() const;
  // Bytes of the repacked copies made at load, besides the mapped file.
  uint64_t PackedBytes() const;

  // Runs `batch`: writes each token's K/V into `cache` for its sequence (slot) at its
  // position, then fills `out` for the batch's output rows. Tokens of one
  // sequence must come in position order, and every earlier position of the
  // sequence must already be in the cache or earlier in this batch.
  absl::Status Forward(const Batch& batch, KvStore& cache, ForwardContext& ctx,
                       ForwardOutput& out) const;

 private:
  Model();
  // Makes every matrix ready for `device` (Backend::PrepareWeight: on the
  // CPU, repacked where its ISA has a faster layout); the views then point
  // at what it made.
  absl::Status PrepareMatrices(Backend& device, const LoadProgressFn& progress);

  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ComputeDevice device_ = ComputeDevice::Cpu();
  std::unique_ptr<ModelWeights> weights_;
};

}  // namespace swiftlet
