// Quantizing activations on the fly for the matmul kernels: the Q8_0 and
// Q8_K quantizers of quantize.h, each with SIMD twins chosen once from
// CPUID. Every twin is bit-identical to the scalar quantizer: the block
// maximum is exact in any order, the scale is computed by the same scalar
// code, and each element is one float multiply rounded half-to-even, as
// std::nearbyint does in the default rounding mode.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"
#include "kernels/cpu_features.h"
#include "kernels/quant_blocks.h"

namespace swiftlet {

struct ActivationQuantizers {
  void (*q8_0)(const float* x, BlockQ8_0* y, int64_t n);
  void (*q8_k)(const float* x, BlockQ8_K* y, int64_t n);
};

// The quantizers for `isa` (the scalar ones where it has no twin).
const ActivationQuantizers& ActivationQuantizersFor(KernelIsa isa);

// QuantizeRow for an activation type (Q8_0 or Q8_K; other types take the
// scalar QuantizeRow) with the quantizers of ChosenKernelIsa().
void QuantizeActivationRow(TensorType type, const float* x, void* dst, int64_t n);

}  // namespace swiftlet
