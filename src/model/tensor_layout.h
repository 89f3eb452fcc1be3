// The tensors a Llama-family model holds, by GGUF name, with the shape each
// must have under a ModelConfig. Shared by the loader (which binds them), the
// checker (inspect) and the random-model generator (which writes them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model_config.h"

namespace swiftlet {

class GgufFile;  // gguf/gguf_file.h

enum class TensorRole {
  kEmbedding,     // token_embd.weight
  kOutput,        // output.weight
  kNorm,          // RMSNorm weights
  kBias,          // qwen2 QKV biases
  kAttnQ,
  kAttnK,
  kAttnV,
  kAttnOutput,
  kFfnGate,
  kFfnUp,
  kFfnDown,
};

struct ExpectedTensor {
  std::string name;
  std::vector<int64_t> shape;  // ne[0] first, as GGUF stores it.
  TensorRole role;
  int layer = -1;              // -1 for tensors outside the blocks.
};

// Every tensor the config calls for, in file order (embedding, blocks,
// output norm, output).
std::vector<ExpectedTensor> ExpectedTensors(const ModelConfig& config);

// Checks that each expected tensor is present with the expected shape.
// Errors name the file, the tensor and both shapes.
absl::Status ValidateTensors(const ModelConfig& config, const GgufFile& file);

// "[576, 49152]"
std::string ShapeString(const std::vector<int64_t>& shape);

}  // namespace swiftlet
