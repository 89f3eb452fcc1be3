// Converts a GGUF model to another weight format (`swiftlet quantize`).
//
// Every tensor is dequantized to F32 and quantized to the type the target's
// rules give it (model/quant_rules.h); a tensor already in that type is
// copied unchanged. Metadata is carried over with general.file_type updated.
// The error each tensor picks up is measured against its source values.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor_type.h"
#include "gguf/gguf_file.h"
#include "model/quant_rules.h"

namespace swiftlet {

struct TensorQuantStats {
  std::string name;
  TensorType from;
  TensorType to;
  uint64_t n_elements = 0;
  uint64_t bytes_out = 0;
  double sum_sq_error = 0;  // Σ (x - x')², against the source values.
  double sum_sq_value = 0;  // Σ x²

  double rms_error() const;
  // RMS error relative to the RMS of the values (0 for an all-zero tensor).
  double relative_rms_error() const;
};

struct QuantizeReport {
  std::vector<TensorQuantStats> tensors;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  TensorQuantStats total;  // Sums over all tensors.
};

// Called after each tensor: tensors done, tensors in all, input bytes done.
using QuantizeProgressFn =
    std::function<void(size_t done, size_t total, uint64_t bytes_done, uint64_t bytes_total)>;

// Writes `in` converted to `target` at `out_path`. Fails, naming the tensor,
// when a tensor's source type cannot be converted.
absl::StatusOr<QuantizeReport> QuantizeModel(const GgufFile& in, const std::string& out_path,
                                             const QuantTarget& target, int threads,
                                             const QuantizeProgressFn& progress = nullptr);

}  // namespace swiftlet
