// Scalar dot products of one weight row with one activation row, as the
// fast kernels compute them: the activation is already quantized (Q8_0 for
// the 32-wide weight types, Q8_K for the K types), integer products are
// summed per block, and each block's sum is scaled in float and added in
// block order. This is the specification the SIMD kernels must reproduce.
#pragma once

#include <cstdint>

#include "core/tensor_type.h"
#include "kernels/cpu_features.h"

namespace swiftlet {

// The type activations are quantized to for weights of `weight_type`:
// Q8_0, Q8_K, or F32 (float weights take float activations).
TensorType ActivationTypeFor(TensorType weight_type);

// Whether MatMul supports weights of this type.
bool CanMatMul(TensorType weight_type);

// dot(weight row, activation row) over n elements. `act` is in
// ActivationTypeFor(weight_type). Runs the variant ChosenKernelIsa() picked
// (kernels/cpu_features.h); every variant gives the scalar result bit for bit.
float VecDot(TensorType weight_type, const void* weight, const void* act, int64_t n);

// The scalar specification itself.
float VecDotScalar(TensorType weight_type, const void* weight, const void* act, int64_t n);

// True when `isa` has its own kernel for the type (else VecDot falls back to
// scalar); for tests and `inspect --system`.
bool HasSimdVecDot(KernelIsa isa, TensorType weight_type);
// The function VecDot uses for a type under `isa`.
using VecDotFnPtr = float (*)(const void* weight, const void* act, int64_t n);
VecDotFnPtr VecDotFor(KernelIsa isa, TensorType weight_type);

}  // namespace swiftlet
