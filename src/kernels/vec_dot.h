// Scalar dot products of one weight row with one activation row, as the
// fast kernels compute them: the activation is already quantized (Q8_0 for
// the 32-wide weight types, Q8_K for the K types), integer products are
// summed per block, and each block's sum is scaled in float and added in
// block order. This is the specification the SIMD kernels must reproduce.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"

namespace swiftlet {

// The type activations are quantized to for weights of `weight_type`:
// Q8_0, Q8_K, or F32 (float weights take float activations).
TensorType ActivationTypeFor(TensorType weight_type);

// Whether MatMul supports weights of this type.
bool CanMatMul(TensorType weight_type);

// dot(weight row, activation row) over n elements. `act` is in
// ActivationTypeFor(weight_type).
float VecDot(TensorType weight_type, const void* weight, const void* act, int64_t n);

}  // namespace swiftlet
