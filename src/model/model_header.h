// A model file read without its weights: the config and the tensor table
// from its GGUF header, validated as Model::Load validates them (every
// tensor the config calls for present with its shape), for tools that size
// a model they do not run (perf/model_shape.h, for the capacity planner).
// The file is mapped, so the check that tensor data lies inside it holds,
// but no weight page is read or packed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "model/model.h"
#include "model/model_config.h"

namespace swiftlet {

struct ModelHeader {
  ModelConfig config;
  std::vector<TensorInfo> tensors;  // In file order.
  uint64_t file_bytes = 0;
};

// Errors name the file and the key or tensor at fault.
absl::StatusOr<ModelHeader> ReadModelHeader(const std::string& path);

}  // namespace swiftlet
