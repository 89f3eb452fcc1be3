// Embeddings: the model's final hidden states (after the output norm)
// pooled over an input as the GGUF says (`<arch>.pooling_type`: 1 mean,
// 2 first token, 3 last token; absent or 0: mean), then L2-normalised.
// The engine runs embedding requests through its own batches
// (engine/engine.h) and pools their rows here as the chunks come.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"

namespace swiftlet {

struct ModelConfig;  // model/model_config.h

enum class Pooling { kMean, kFirst, kLast };
const char* PoolingName(Pooling p);

// The pooling the model's file declares for its architecture (absent or 0:
// mean); InvalidArgument for a type this server does not compute (rank
// pooling) or a malformed key.
absl::StatusOr<Pooling> PoolingFor(const ModelConfig& config);

// Whether the hidden row at `position` of an `n`-token input takes part.
bool PoolingWants(Pooling pooling, int64_t position, int64_t n);

// Sums the rows that take part, in the order given, in double: fed chunk by
// chunk, it gives the same bits as all rows at once.
class PooledSum {
 public:
  explicit PooledSum(int64_t width) : acc_(static_cast<size_t>(width), 0.0) {}
  void Add(const float* row);
  // The sum's direction, L2-normalised (mean and sum point the same way);
  // a zero vector stays zero.
  std::vector<float> Normalized() const;

 private:
  std::vector<double> acc_;
};

// `rows` hidden states of `width` floats, pooled and L2-normalised. rows >= 1.
std::vector<float> PoolAndNormalize(const float* rows, int64_t n_rows, int64_t width, Pooling pooling);

}  // namespace swiftlet
