// Weight formats for whole models: which type each tensor gets when a model
// is quantized (`swiftlet quantize`) or generated (`swiftlet tools
// make-model`). docs/QUANTIZATION.md states the same rules for users.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "core/tensor_type.h"
#include "model/tensor_layout.h"

namespace swiftlet {

struct QuantTarget {
  std::string_view name;        // Canonical spelling: "Q4_K_M".
  TensorType base;              // The type of most 2-D weights.
  bool k_mix = false;           // Q4_K_M, Q5_K_M: Q6_K for the sensitive tensors.
  uint32_t llama_file_type = 0; // general.file_type, as llama.cpp numbers it.
};

// F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q4_K, Q5_K, Q6_K, Q4_K_M, Q5_K_M;
// case-insensitive.
absl::StatusOr<QuantTarget> ParseQuantTarget(std::string_view name);
// The names ParseQuantTarget accepts, for help and error messages.
std::string_view QuantTargetNames();

// What the type rules need to know about one tensor.
struct TensorSlot {
  std::string_view name;
  std::span<const int64_t> shape;  // ne[0] first.
  int n_layer = 0;                 // Blocks in the model (for layer rules).
};

// The type `target` gives this tensor:
//  - 1-D tensors (norms, biases) stay F32;
//  - Q4_K_M: output.weight (token_embd.weight when the head is tied to it)
//    gets Q6_K, and attn_v.weight / ffn_down.weight get Q6_K in the first
//    and last eighth of the layers and every third layer between; all other
//    2-D weights get Q4_K;
//  - Q4_0: as base, except the output head gets Q6_K;
//  - otherwise the base type.
// A row length the chosen type's blocks do not divide falls back: K-quants
// (256-element blocks) to Q8_0, and anything to F16 if 32 does not divide
// the row either.
TensorType ChooseTensorType(const QuantTarget& target, const TensorSlot& slot,
                            bool tied_head);

// The layer number in "blk.N.…", or -1.
int LayerOfTensor(std::string_view name);

}  // namespace swiftlet
