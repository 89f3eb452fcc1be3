// Embeddings for /v1/embeddings: the model's final hidden states (after the
// output norm) pooled over each input as the GGUF says
// (`<arch>.pooling_type`: 1 mean, 2 first token, 3 last token; absent or 0:
// mean), then L2-normalised.
//
// A decoder model's embeddings run on one worker thread of their own with
// a small KV cache for one input at a time, beside the engine rather than
// inside its batches: an embedding needs every prompt row's hidden state,
// which the generation batches never return. Jobs wait in a bounded queue;
// a full queue is refused at once (the server answers 429).
//
// Thread-safe: Submit from any thread; callbacks run on the worker thread
// and must be quick (they hand the result to an HTTP writer).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/status.h"

namespace swiftlet {

class Model;        // model/model.h
struct ModelConfig;  // model/model_config.h

enum class Pooling { kMean, kFirst, kLast };
const char* PoolingName(Pooling p);

// The pooling the model's file declares for its architecture (absent or 0:
// mean); InvalidArgument for a type this server does not compute (rank
// pooling) or a malformed key.
absl::StatusOr<Pooling> PoolingFor(const ModelConfig& config);

// `rows` hidden states of `width` floats, pooled and L2-normalised (a zero
// vector stays zero). rows >= 1.
std::vector<float> PoolAndNormalize(const float* rows, int64_t n_rows, int64_t width, Pooling pooling);

struct EmbeddingWorkerOptions {
  int threads = 1;
  size_t max_queue = 64;     // Jobs waiting.
  int64_t max_tokens = 0;    // Per input; 0: the model's context (capped at 8192).
  int64_t chunk_tokens = 512;
  Pooling pooling = Pooling::kMean;
};

struct EmbeddingResult {
  std::vector<std::vector<float>> embeddings;  // One per input, in order.
  int64_t prompt_tokens = 0;
};

class EmbeddingWorker {
 public:
  using Callback = std::function<void(absl::StatusOr<EmbeddingResult>)>;

  // The model must outlive the worker.
  static absl::StatusOr<std::unique_ptr<EmbeddingWorker>> Create(const Model& model,
                                                                 EmbeddingWorkerOptions options);
  // Fails what is still queued (Unavailable) and joins the thread.
  ~EmbeddingWorker();

  EmbeddingWorker(const EmbeddingWorker&) = delete;
  EmbeddingWorker& operator=(const EmbeddingWorker&) = delete;

  int64_t max_tokens() const { return max_tokens_; }
  Pooling pooling() const { return options_.pooling; }

  // Queues the inputs (each non-empty, <= max_tokens ids in the vocabulary:
  // the caller checks). False when the queue is full; `done` is then not
  // called.
  bool Submit(std::vector<std::vector<int32_t>> inputs, Callback done);

 private:
  struct Job {
    std::vector<std::vector<int32_t>> inputs;
    Callback done;
  };

  struct Parts;  // The cache and forward context (worker thread only).

  EmbeddingWorker(const Model& model, EmbeddingWorkerOptions options, std::unique_ptr<Parts> parts,
                  int64_t max_tokens);
  void Loop();
  absl::StatusOr<EmbeddingResult> Run(const Job& job);

  const Model& model_;
  const EmbeddingWorkerOptions options_;
  const int64_t max_tokens_;
  std::unique_ptr<Parts> parts_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace swiftlet
